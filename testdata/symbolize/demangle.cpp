// C++ names for the symbolizer's demangling test.
#include <vector>

namespace symtest {

template <typename T> struct Box {
    T value;
    __attribute__((noinline)) T twice(T x) const { return value * x * 2; }
};

__attribute__((noinline)) long sum(const std::vector<long> &v, int scale) {
    long s = 0;
    for (long x : v) {
        s += x * scale;
    }
    return s;
}

} // namespace symtest

extern "C" long sym_cpp_entry(long n) {
    symtest::Box<long> b{n};
    std::vector<long> v(4, n);
    return b.twice(n) + symtest::sum(v, 3);
}
