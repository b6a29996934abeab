"""A fixed compile before each cold/warm pair: how fast this machine compiles right now.

A case's compile CPU time moves with the machine itself, not only with its
neighbours' use of the CPUs: on the shared development machine one morning
every compile of an unchanged case took 40-60% more CPU time than three
hours before, five runs in a row, with every contention signal quiet and the
fixed Python kernel (`contention.calibrate`, a loop that fits in a CPU's
cache) at its usual speed; one of those runs FAILed. What had slowed was
what a compile does: the C++ compiler (Inductor's `compile_file` grew most)
and CPython's compiler, which read much more memory than that loop.

So each pair starts with a reference compile, the same work every time: the
system's C++ compiler (`$CXX`, else `c++`, `g++`, `clang++`: Inductor's
choice on CPU) on a fixed source that includes the standard library's
containers and instantiates templates, plus CPython compiling a fixed
generated module. Its CPU seconds (the compiler process's, and this
process's for CPython's part) travel with the case's contention signals
(`Contention.reference_s`), and the gate compares them with the baseline's.
About 1.2 s per pair here (a pair of compiles takes about 20 s).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import time

#: STL containers and a template instantiated 96 times: a compiler's front and middle end at work
CXX_SOURCE = """
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

template <int N> struct Unroll {
  template <class F> static void run(F&& f) { Unroll<N - 1>::run(f); f(N); }
};
template <> struct Unroll<0> {
  template <class F> static void run(F&&) {}
};

double kernel(const std::vector<double>& x) {
  double s = 0;
  Unroll<96>::run([&](int i) { s += std::accumulate(x.begin(), x.end(), 0.0) * i; });
  return s;
}

std::string describe(const std::map<std::string, std::vector<int>>& m) {
  std::ostringstream out;
  for (const auto& [key, values] : m) out << key << values.size();
  return out.str();
}

std::unordered_map<std::string, std::function<double(double)>> table() {
  std::unordered_map<std::string, std::function<double(double)>> t;
  t["square"] = [](double v) { return v * v; };
  t["half"] = [](double v) { return v / 2; };
  return t;
}
"""

#: a module of classes with comprehensions and dict displays, compiled (not run) by CPython
PY_SOURCE = "\n".join(
    f"class C{i}:\n"
    f"    def f(self, x, y={i}):\n"
    f"        return [x * k + y for k in range({i % 7 + 1}) if k % 2] + list({{'a': x, 'b': y}}.items())\n"
    for i in range(1000)
)
#: seconds the C++ compiler may take on the reference (it takes about one)
TIMEOUT_S = 120.0


def compiler() -> str | None:
    """The C++ compiler Inductor would use on CPU: `$CXX`, else the first of c++, g++, clang++."""
    chosen = os.environ.get("CXX")
    if chosen:
        return shutil.which(chosen)
    return next(
        (found for name in ("c++", "g++", "clang++") if (found := shutil.which(name))), None
    )


def reference_cpu_s() -> float | None:
    """CPU seconds of the reference compile now; None without a working C++ compiler (the
    comparison then decides nothing, as a contention signal the platform lacks)."""
    cxx = compiler()
    if cxx is None:
        return None
    before = _children_cpu()
    try:
        done = subprocess.run(
            [cxx, "-std=c++17", "-O2", "-x", "c++", "-c", "-", "-o", os.devnull],
            input=CXX_SOURCE,
            text=True,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    cxx_s = _children_cpu() - before
    started = time.process_time()
    compile(PY_SOURCE, "<pytest-torchcompile reference>", "exec")
    return cxx_s + time.process_time() - started


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
