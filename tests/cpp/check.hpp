// A minimal test harness for the engine's C++ unit tests (no third-party
// framework): TEST(name) defines a case, CHECK/CHECK_EQ report a failure with
// its file, line and values and let the case go on, and main() runs every
// case and exits non-zero when any check failed (ctest reads the exit code).
#pragma once
#include <cstdio>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace check {

struct Case {
    const char* name;
    std::function<void()> fn;
};

inline std::vector<Case>& cases() {
    static std::vector<Case> all;
    return all;
}

inline int& failures() {
    static int n = 0;
    return n;
}

struct Register {
    Register(const char* name, std::function<void()> fn) { cases().push_back({name, std::move(fn)}); }
};

inline void fail(const char* file, int line, const std::string& what) {
    ++failures();
    std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what.c_str());
}

template <class A, class B>
void check_eq(const A& a, const B& b, const char* as, const char* bs, const char* file, int line) {
    if (a == b) return;
    std::ostringstream m;
    m << as << " == " << bs << " (got " << a << ", expected " << b << ")";
    fail(file, line, m.str());
}

inline int run_all() {
    for (const Case& c : cases()) {
        int before = failures();
        try {
            c.fn();
        } catch (const std::exception& e) {
            fail(c.name, 0, std::string("threw ") + e.what());
        }
        std::printf("%s %s\n", failures() == before ? "ok  " : "FAIL", c.name);
    }
    std::printf("%zu cases, %d failed checks\n", cases().size(), failures());
    return failures() == 0 ? 0 : 1;
}

}  // namespace check

#define CHECK_CAT2(a, b) a##b
#define CHECK_CAT(a, b) CHECK_CAT2(a, b)
#define TEST(name)                                                    \
    static void name();                                               \
    static ::check::Register CHECK_CAT(register_, name)(#name, name); \
    static void name()
#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) ::check::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
    } while (0)
#define CHECK_EQ(a, b) ::check::check_eq((a), (b), #a, #b, __FILE__, __LINE__)
// The statement must throw an exception of type E.
#define CHECK_THROWS(E, stmt)                                                        \
    do {                                                                             \
        bool thrown_ = false;                                                        \
        try {                                                                        \
            stmt;                                                                    \
        } catch (const E&) {                                                         \
            thrown_ = true;                                                          \
        }                                                                            \
        if (!thrown_) ::check::fail(__FILE__, __LINE__, #stmt " did not throw " #E); \
    } while (0)

#define CHECK_MAIN \
    int main() { return ::check::run_all(); }
