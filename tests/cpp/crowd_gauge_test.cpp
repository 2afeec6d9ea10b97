// CrowdGauge (cpp/crowd_gauge.hpp): no verdict before one is measured, the
// measured one while the store stays under twice the size it was measured
// at, and none again once it has doubled (so it is measured anew).
#include "crowd_gauge.hpp"
#include "check.hpp"

using namespace agentsensus;

TEST(no_verdict_until_measured) {
    CrowdGauge g;
    CHECK(!g.verdict(1));
    CHECK(!g.verdict(1000000));
}

TEST(verdict_holds_until_the_store_doubles) {
    CrowdGauge g;
    g.set(1000, true);
    CHECK(g.verdict(1000).value_or(false));
    CHECK(g.verdict(1999).value_or(false));
    CHECK(g.verdict(10).value_or(false));  // a store that shrank keeps it
    CHECK(!g.verdict(2000));
    g.set(2000, false);
    CHECK(!g.verdict(2000).value_or(true));
    CHECK(!g.verdict(3999).value_or(true));
    CHECK(!g.verdict(4000));
}

TEST(a_store_of_one_record) {
    CrowdGauge g;
    g.set(1, false);
    CHECK(g.verdict(1).has_value());
    CHECK(!g.verdict(1).value_or(true));
    CHECK(!g.verdict(2));
}

int main() { return check::run_all(); }
