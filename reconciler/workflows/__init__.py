"""What a command does, reusable by the command line and the reconcile loop: observe, plan,
apply with its seat and gateway steps, locks, journal and drain."""
