"""Host timing shared by the CPU peer scripts: the median of `reps` runs after one warm-up."""
import statistics
import time


def median_seconds(fn, reps):
    """Median wall time in seconds of `fn()` over `reps` runs, after one untimed run."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
