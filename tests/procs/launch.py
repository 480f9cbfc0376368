"""launch.py PROGRAM ARGS...: a Python script that starts a CUDA program
with subprocess (as a training script's driver would) and exits with its
status."""
import subprocess
import sys

sys.exit(subprocess.run(sys.argv[1:]).returncode)
