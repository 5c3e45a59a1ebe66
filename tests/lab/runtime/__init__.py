"""Host-side tools of the lab, run by the hosts' daemons and SSH sessions with the
system python3 (standard library only): nvidia-smi, the OCI runtime wrapper that hands
simulated GPUs to containers, and the gateway's supervisor and restart command.
"""
