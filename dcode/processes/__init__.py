"""The processes dcode starts, tracked as trees so that none outlives it.

``table`` reads ``/proc``; ``ending`` signals a set of processes (SIGTERM, a grace, SIGKILL)
without ever hitting a process that merely reuses a pid; ``cgroup`` keeps dcode and everything
it starts in a cgroup of its own where the machine allows it; ``records`` writes down what runs
so that the next start can end what a ``kill -9`` left behind; ``trees`` ties them together;
``environ_block`` takes the provider keys out of what ``/proc/<pid>/environ`` shows of dcode.

Standard library only, and light: the command line imports it before anything heavy.
"""
