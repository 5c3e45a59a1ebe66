"""What fleet writes of what already runs: the desired/ files `fleet import` writes
(`desired_files`, with each engine's seat file in `imported_seat`) and where a fetch puts a
model (`model_fetch`). A seat's definition is its runtime's to render (`fleet.runtimes`),
a gateway config its kind's (`fleet.gateways`)."""
