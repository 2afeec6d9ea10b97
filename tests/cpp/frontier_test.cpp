// The Planfence frontier walk (LineageImpl::frontier, cpp/src/lineage/lineage.hpp) on crafted
// lineage graphs: which links it reaches, once each, in owner-key-version
// order, and how a scope cuts it.
#include <string>
#include <vector>

#include "agentsensus/errors.hpp"
#include "check.hpp"
#include "lineage/lineage.hpp"
#include "lmdb/lmdb_env.hpp"
#include "temp_dir.hpp"

using namespace agentsensus;

namespace {

ValueDigest digest_of(const std::string& value) {
    ValueDigest d{};
    for (size_t i = 0; i < value.size(); ++i) d[i % d.size()] ^= static_cast<unsigned char>(value[i] + i);
    return d;
}

// A lineage in a fresh LMDB environment, with one-line writers.
struct Graph {
    TempDir dir;
    Env env{dir.path(), Env::Options{}};
    LineageImpl lin{env};

    uint64_t publish(const std::string& key, const std::string& owner, const std::string& value) {
        LineageOp op;
        op.kind = LineageOp::publish;
        op.key = key;
        op.owner = owner;
        op.value = value;
        op.digest = digest_of(value);
        return lin.apply({op}, true).at(0);
    }
    uint64_t derive(const std::string& key, const std::string& owner,
                    std::vector<std::pair<std::string, uint64_t>> inputs) {
        LineageOp op;
        op.kind = LineageOp::derive;
        op.key = key;
        op.owner = owner;
        op.value = key + " from " + std::to_string(inputs.size());
        op.digest = digest_of(op.value);
        op.inputs = std::move(inputs);
        return lin.apply({op}, true).at(0);
    }
    // "key@version/owner" per link, with a '*' on derived ones.
    std::vector<std::string> frontier(const std::string& key, const Scope* scope = nullptr) {
        std::vector<std::string> out;
        for (const LinkRow& l : lin.frontier(key, scope))
            out.push_back(l.key + "@" + std::to_string(l.version) + "/" + l.owner + (l.derived ? "*" : ""));
        return out;
    }
};

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
    return s;
}

}  // namespace

TEST(a_base_key_has_an_empty_frontier) {
    Graph g;
    g.publish("x", "o", "1");
    CHECK_EQ(join(g.frontier("x")), std::string(""));
}

TEST(unknown_key_is_not_found) {
    Graph g;
    CHECK_THROWS(NotFound, g.lin.frontier("nope", nullptr));
}

TEST(frontier_keeps_the_recorded_version_not_the_head) {
    Graph g;
    g.publish("x", "o1", "v1");
    g.derive("d", "o2", {{"x", 1}});
    g.publish("x", "o1", "v2");  // x moves on; d was made from x@1
    CHECK_EQ(join(g.frontier("d")), std::string("x@1/o1"));
}

TEST(diamond_reaches_a_shared_input_once) {
    Graph g;
    g.publish("a", "alice", "a1");
    g.publish("b", "bob", "b1");
    g.derive("m", "carol", {{"a", 1}});
    g.derive("n", "carol", {{"a", 1}, {"b", 1}});
    g.derive("t", "carol", {{"m", 1}, {"n", 1}});
    // Sorted by owner, then key, then version; a@1 reached along two paths.
    CHECK_EQ(join(g.frontier("t")), std::string("a@1/alice b@1/bob m@1/carol* n@1/carol*"));
}

TEST(two_versions_of_one_input_are_two_links_in_version_order) {
    Graph g;
    g.publish("x", "o", "1");
    g.derive("p", "q", {{"x", 1}});
    g.publish("x", "o", "2");
    g.derive("r", "q", {{"x", 2}});
    g.derive("t", "q", {{"p", 1}, {"r", 1}});
    CHECK_EQ(join(g.frontier("t")), std::string("x@1/o x@2/o p@1/q* r@1/q*"));
}

TEST(owners_sort_by_name_not_by_when_they_were_met) {
    Graph g;
    g.publish("k1", "zeta", "1");  // zeta is the first owner the lineage meets
    g.publish("k2", "alpha", "1");
    g.publish("k0", "mid", "1");
    g.derive("t", "zeta", {{"k1", 1}, {"k2", 1}, {"k0", 1}});
    CHECK_EQ(join(g.frontier("t")), std::string("k2@1/alpha k0@1/mid k1@1/zeta"));
}

TEST(deep_chain_is_walked_to_the_bottom) {
    Graph g;
    g.publish("k0", "o", "base");
    for (int i = 1; i <= 200; ++i) g.derive("k" + std::to_string(i), "o", {{"k" + std::to_string(i - 1), 1}});
    std::vector<std::string> f = g.frontier("k200");
    CHECK_EQ(f.size(), size_t(200));
    CHECK(!f.empty() && f.front() == "k0@1/o");  // "k0" sorts first and is the only base
}

TEST(scope_keeps_what_lies_under_a_scoped_key) {
    Graph g;
    g.publish("a", "alice", "a1");
    g.publish("b", "bob", "b1");
    g.derive("m", "carol", {{"a", 1}});
    g.derive("n", "carol", {{"a", 1}, {"b", 1}});
    g.derive("t", "carol", {{"m", 1}, {"n", 1}});
    Scope n{"n"};
    CHECK_EQ(join(g.frontier("t", &n)), std::string("a@1/alice b@1/bob n@1/carol*"));
    Scope a{"a"};  // a scoped input is kept wherever it is met
    CHECK_EQ(join(g.frontier("t", &a)), std::string("a@1/alice"));
    Scope root{"t"};  // the root in scope: everything
    CHECK_EQ(join(g.frontier("t", &root)), join(g.frontier("t")));
    Scope none{"elsewhere"};
    CHECK_EQ(join(g.frontier("t", &none)), std::string(""));
}

// A derived key reached first outside the scope and then inside it must be
// walked again; inputs are walked in key order, so try both orders.
TEST(scope_reaching_a_node_a_second_time_walks_it_again) {
    for (const char* scoped : {"a_scoped", "z_scoped"}) {
        Graph g;
        g.publish("base", "o1", "1");
        g.derive("mid", "o2", {{"base", 1}});
        g.derive(scoped, "o2", {{"mid", 1}});
        g.derive("top", "o3", {{"mid", 1}, {scoped, 1}});
        Scope s{scoped};
        CHECK_EQ(
            join(g.frontier("top", &s)),
            std::string("base@1/o1 ") + (std::string(scoped) < "mid" ? std::string(scoped) + "@1/o2* mid@1/o2*"
                                                                     : "mid@1/o2* " + std::string(scoped) + "@1/o2*"));
    }
}

TEST(observed_versions_are_links_without_inputs) {
    Graph g;
    LineageOp obs;
    obs.kind = LineageOp::observe;
    obs.key = "remote";
    obs.owner = "far";
    obs.version = 7;
    obs.value = "seen";
    obs.digest = digest_of("seen");
    g.lin.apply({obs}, true);
    g.derive("local", "near", {{"remote", 7}});
    CHECK_EQ(join(g.frontier("local")), std::string("remote@7/far"));
}

CHECK_MAIN
