// WordMap (cpp/src/lexical/word_table.hpp): the same answers as a std::map
// for any words, through growth, erasures and clears; emplace never
// overwrites, set always does.
#include "lexical/word_table.hpp"

#include <map>
#include <random>
#include <string>

#include "check.hpp"

using namespace agentsensus;

TEST(finds_what_was_emplaced_and_nothing_else) {
    WordTable t;
    CHECK(t.find("alpha") == nullptr);
    t.emplace("alpha", 3);
    t.emplace("", 7);  // any bytes are a key, the empty string too
    CHECK(t.find("alpha") && *t.find("alpha") == 3);
    CHECK(t.find("") && *t.find("") == 7);
    CHECK(t.find("alph") == nullptr);
    CHECK(t.find("alphab") == nullptr);
    CHECK_EQ(t.size(), size_t{2});
}

TEST(emplace_keeps_the_first_value) {
    WordTable t;
    t.emplace("beta", 1);
    t.emplace("beta", 2);
    CHECK(*t.find("beta") == 1);
    CHECK_EQ(t.size(), size_t{1});
}

TEST(agrees_with_a_map_through_growth) {
    // Many words, long and short, repeated: far past the first 64 slots.
    std::mt19937_64 rng(7);
    std::map<std::string, double> want;
    WordTable t;
    for (int i = 0; i < 5000; ++i) {
        std::string w;
        const size_t len = rng() % 24;
        for (size_t j = 0; j < len; ++j) w.push_back(static_cast<char>('a' + rng() % 6));
        const double v = static_cast<double>(rng() % 1000);
        want.emplace(w, v);
        t.emplace(w, v);
        if (i % 97 == 0)
            for (const auto& [k, x] : want) CHECK(t.find(k) && *t.find(k) == x);
    }
    CHECK_EQ(t.size(), want.size());
    for (const auto& [k, x] : want) CHECK(t.find(k) && *t.find(k) == x);
    CHECK(t.find("zzzz") == nullptr);
}

TEST(set_overwrites_and_erase_forgets) {
    WordMap<size_t> t;
    t.set("alpha", 3);
    t.set("alpha", 4);
    CHECK(*t.find("alpha") == 4);
    t.erase("alpha");
    CHECK(t.find("alpha") == nullptr);
    CHECK_EQ(t.size(), size_t{0});
    t.emplace("alpha", 5);  // an erased word takes a value again
    CHECK(*t.find("alpha") == 5);
    t.clear();
    CHECK(t.find("alpha") == nullptr);
    CHECK_EQ(t.size(), size_t{0});
}

TEST(agrees_with_a_map_through_sets_erasures_and_clears) {
    std::mt19937_64 rng(11);
    std::map<std::string, size_t> want;
    WordMap<size_t> t(16);
    for (int i = 0; i < 20000; ++i) {
        std::string w = "w" + std::to_string(rng() % 300);
        const uint64_t op = rng() % 10;
        if (op < 5) {
            want[w] = i;
            t.set(w, i);
        } else if (op < 9) {
            want.erase(w);
            t.erase(w);
        } else if (rng() % 50 == 0) {
            want.clear();
            t.clear();
        }
        CHECK_EQ(t.size(), want.size());
        auto it = want.find(w);
        CHECK(it == want.end() ? t.find(w) == nullptr : (t.find(w) && *t.find(w) == it->second));
    }
    for (int k = 0; k < 300; ++k) {
        const std::string w = "w" + std::to_string(k);
        auto it = want.find(w);
        CHECK(it == want.end() ? t.find(w) == nullptr : (t.find(w) && *t.find(w) == it->second));
    }
}

int main() { return check::run_all(); }
