"""`python -m reconciler` runs the fleet command line."""

from reconciler.cli import main

main()
