"""Anomaly mode records a Python traceback while the graph is built; Python's garbage
collector may run then and free tensors, which takes the graph's lock. That must never be
done while the lock is held (it once deadlocked in gradient_edge)."""

import subprocess
import sys
import textwrap


def test_garbage_collection_while_recording_tracebacks_does_not_deadlock():
    code = textwrap.dedent(
        """
        import gc, warnings
        import ferrograd as torch
        warnings.simplefilter("ignore")
        gc.set_threshold(1)  # collect on nearly every allocation
        with torch.autograd.detect_anomaly():
            for _ in range(200):
                a = torch.ones(3, requires_grad=True)
                b = torch.ones(3, requires_grad=True)
                cycle = [(a * 2).exp()]
                cycle.append(cycle)  # cyclic garbage that holds a graph
                del cycle
                # b's first use creates its AccumulateGrad and records a traceback: the
                # collector runs inside and frees the cycle's graph
                (a * b).sum().backward()
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
