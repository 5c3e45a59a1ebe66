"""The live fleet: what observation found (hosts, seats, gateway), assembled from facts, and
the findings worth a reviewer's attention."""
