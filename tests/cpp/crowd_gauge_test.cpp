// CrowdGauge (cpp/src/index/crowd_gauge.hpp): no verdict before one is measured, the
// measured one while the store stays under twice the size it was measured
// at, and none again once it has doubled (so it is measured anew); and the
// crowded rule's wider width.
#include "index/crowd_gauge.hpp"
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

// The crowded width: 4x the search width up to 2^16 records, then growing
// with log2 of the store's size; never below 4x, whatever the size.
TEST(crowded_width_grows_with_the_graphs_depth) {
    CHECK(crowded_width(64, 0) == 256);
    CHECK(crowded_width(64, 10000) == 256);
    CHECK(crowded_width(64, 65536) == 256);
    CHECK(crowded_width(64, 100000) == 266);
    CHECK(crowded_width(64, 1000000) == 319);
    CHECK(crowded_width(64, 10000000) == 373);
    CHECK(crowded_width(16, 1000000) == 80);
    CHECK(crowded_width(1, 1) == 4);
}

int main() { return check::run_all(); }
