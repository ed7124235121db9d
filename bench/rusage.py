#!/usr/bin/env python3
"""Run a command and report the CPU it used (user+sys of it and its children) and its peak RSS.

Usage: rusage.py OUT_FILE -- CMD ARGS...   The command's stdout/stderr pass through; OUT_FILE
gets one line "user_s sys_s maxrss_kib exit_code". Used by the bench scripts to measure every
generator the same way, from outside.
"""
import resource
import subprocess
import sys

out_file = sys.argv[1]
cmd = sys.argv[sys.argv.index("--") + 1:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
code = subprocess.call(cmd)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out_file, "w") as f:
    f.write(f"{after.ru_utime - before.ru_utime:.4f} {after.ru_stime - before.ru_stime:.4f} "
            f"{after.ru_maxrss} {code}\n")
sys.exit(code)
