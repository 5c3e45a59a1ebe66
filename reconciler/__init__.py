"""reconciler: the shell around the fleet core.

Every adapter that touches the world lives here (SSH, Docker, the gateway, Git), and
so do observe, apply and the `fleet` command line. It imports `fleet`; never the reverse.
"""
