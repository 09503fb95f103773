"""cpu-time.py OUT COMMAND...: runs COMMAND as a child subreaper (PR_SET_CHILD_SUBREAPER), so that processes it
leaves behind (pyspark's JVM outlives the python3 that started it) are reparented here and reaped, then writes to
OUT the user+sys CPU seconds of COMMAND and all its descendants. Exits with COMMAND's status."""
import ctypes
import os
import resource
import subprocess
import sys

ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
status = subprocess.call(sys.argv[2:])
while True:  # reap every orphaned descendant, so its CPU time is counted
    try:
        os.wait()
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    out.write(f"{usage.ru_utime + usage.ru_stime:.2f}\n")
sys.exit(status)
