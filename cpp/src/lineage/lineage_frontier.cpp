// The frontier: the versions a key's head was derived from, walked through
// the inputs (kept to a scope when given) and grouped by the owner to ask.
#include "lineage/lineage.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "agentsensus/errors.hpp"
#include "agentsensus/limits.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "lineage/lineage_format.hpp"

namespace agentsensus {

using namespace lineage_format;

// ------------------------------------------------------------------- frontier

void LineageImpl::walk(MDB_txn* txn, std::string_view key, const Scope* scope, Reached& out) {
    out.links.clear();
    out.owner_ids.clear();
    auto root = key_rec(txn, key);
    if (!root) throw NotFound("no lineage key " + quoted(key));
    if (root->head == 0) return;

    struct Node {
        uint32_t key;
        uint64_t version;
        bool in_scope;  // a derived key above it on this path is in scope
    };
    struct NodeHash {
        size_t operator()(const std::pair<uint32_t, uint64_t>& n) const {
            return std::hash<uint64_t>()(n.second * 0x9E3779B97F4A7C15ull ^ n.first);
        }
    };
    // Visited (key, version) -> the strongest in_scope it was walked with: a
    // version reached again only matters if now in scope and before not.
    std::unordered_map<std::pair<uint32_t, uint64_t>, bool, NodeHash> seen;
    // Owner ids in the order met; links hold the index. A plan has few owners,
    // so a linear search with the last hit first beats a hash map.
    std::vector<uint32_t>& ids = out.owner_ids;
    uint32_t last = 0;
    auto owner_index = [&](uint32_t id) -> uint32_t {
        if (last < ids.size() && ids[last] == id) return last;
        for (uint32_t i = 0; i < ids.size(); ++i)
            if (ids[i] == id) return last = i;
        ids.push_back(id);
        return last = static_cast<uint32_t>(ids.size() - 1);
    };
    std::string name;  // Scope holds std::string: one reused buffer for lookups
    auto scoped = [&](std::string_view s) {
        name.assign(s.data(), s.size());
        return scope->count(name) > 0;
    };

    std::vector<Node> stack{{root->id, root->head, scope == nullptr || scoped(key)}};
    seen[{root->id, root->head}] = stack.back().in_scope;
    while (!stack.empty()) {
        Node n = stack.back();
        stack.pop_back();
        MDB_val v;
        if (!get(txn, db_.versions, VersionKey(n.key, n.version).mv(), v)) continue;  // an observed gap
        ParsedVersion pv;
        if (!parse_version(v, pv)) throw Corrupt("a lineage version record is truncated");
        // pv.n is read from disk: trust it only as far as the record's size allows.
        out.links.reserve(out.links.size() + std::min<size_t>(pv.n, pv.inputs.size() / kMinInputEntry));
        InputReader ir(pv.inputs);
        InputEntry e;
        while (ir.next(e)) {
            bool in = n.in_scope || (scope != nullptr && scoped(e.name));
            // Duplicates (one input reached along two paths) go in the grouping.
            if (in) out.links.push_back(Link{e.name, e.version, e.digest, owner_index(e.owner), e.derived != 0});
            if (!e.derived) continue;
            auto rec = key_rec(txn, e.name);
            if (!rec) throw Corrupt("lineage input " + quoted(e.name) + " is recorded but missing");
            auto [it, fresh] = seen.try_emplace({rec->id, e.version}, in);
            if (!fresh) {
                if (it->second || !in) continue;  // cycle-safe: each node walked at most twice
                it->second = in;
            }
            stack.push_back(Node{rec->id, e.version, in});
        }
    }
}

std::vector<uint32_t> LineageImpl::rank_owners(MDB_txn* txn, const std::vector<uint32_t>& ids,
                                               std::vector<std::string_view>& names_out) {
    // Equal names (only in a damaged store) share one rank, so they form one
    // group as a sort by name would.
    std::vector<std::pair<std::string_view, uint32_t>> names;  // name, index in ids
    names.reserve(ids.size());
    for (uint32_t i = 0; i < ids.size(); ++i) names.emplace_back(owner_name(txn, ids[i]), i);
    std::sort(names.begin(), names.end());
    std::vector<uint32_t> rank(ids.size());
    for (size_t i = 0; i < names.size(); ++i) {
        if (i == 0 || names[i].first != names[i - 1].first) names_out.push_back(names[i].first);
        rank[names[i].second] = static_cast<uint32_t>(names_out.size() - 1);
    }
    return rank;
}

namespace {

template <class L> bool link_less(const L& a, const L& b) {
    return a.key != b.key ? a.key < b.key : a.version < b.version;
}

template <class L> bool link_same(const L& a, const L& b) { return a.version == b.version && a.key == b.key; }

}  // namespace

// Sorts each owner's run of links by key, version; true if any run held a
// repeat or two runs share a link (then duplicates must go).
bool LineageImpl::sort_within_owners(Grouped& g) {
    bool dups = false;
    for (size_t o = 0; o + 1 < g.starts.size(); ++o) {
        auto b = g.links.begin() + g.starts[o], e = g.links.begin() + g.starts[o + 1];
        // Strictly increasing: sorted and distinct, the usual case.
        if (std::adjacent_find(b, e, [](const Link& x, const Link& y) { return !link_less(x, y); }) == e) {
            if (o > 0 && b != e && link_same(b[-1], *b)) dups = true;  // across owners: only in a damaged store
            continue;
        }
        std::sort(b, e, link_less<Link>);
        dups = true;
    }
    return dups;
}

// Keeps the first of each (key, version), then recomputes the owner runs;
// owners left with no link (all theirs were another owner's too) go.
void LineageImpl::drop_duplicates(Grouped& g) {
    size_t w = 0;
    for (size_t i = 0; i < g.links.size(); ++i) {
        if (w > 0 && link_same(g.links[w - 1], g.links[i])) continue;
        g.links[w++] = g.links[i];
    }
    g.links.resize(w);
    g.starts.assign(1, 0);
    for (size_t i = 0; i < w; ++i)
        if (i + 1 == w || g.links[i + 1].owner != g.links[i].owner) g.starts.push_back(i + 1);
    std::vector<std::string_view> kept;
    for (size_t o = 0; o + 1 < g.starts.size(); ++o) {
        kept.push_back(g.owners[g.links[g.starts[o]].owner]);
        for (size_t i = g.starts[o]; i < g.starts[o + 1]; ++i) g.links[i].owner = static_cast<uint32_t>(o);
    }
    g.owners.swap(kept);
}

void LineageImpl::group_by_owner(MDB_txn* txn, Reached& r, Grouped& out) {
    out.links.clear();
    out.owners.clear();
    std::vector<uint32_t> rank = rank_owners(txn, r.owner_ids, out.owners);
    // Counting sort by owner rank keeps the walk's order within an owner. A
    // version's inputs are stored sorted by key, so a one-level frontier is
    // already in order and only deeper walks pay for a sort.
    std::vector<size_t> count(out.owners.size() + 1, 0);
    for (Link& l : r.links) {
        l.owner = rank[l.owner];
        ++count[l.owner + 1];
    }
    for (size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
    out.starts = count;
    out.links.resize(r.links.size());
    for (const Link& l : r.links) out.links[count[l.owner]++] = l;
    if (sort_within_owners(out)) drop_duplicates(out);
}

void LineageImpl::walk_grouped(MDB_txn* txn, std::string_view key, const Scope* scope, Grouped& out) {
    Reached r;
    walk(txn, key, scope, r);
    group_by_owner(txn, r, out);
}

std::vector<LinkRow> LineageImpl::frontier(std::string_view key, const Scope* scope) {
    ReadTxn t(env_);
    Grouped g;
    walk_grouped(t.get(), key, scope, g);
    std::vector<LinkRow> out;
    out.reserve(g.links.size());
    for (size_t o = 0; o < g.owners.size(); ++o)
        for (size_t i = g.starts[o]; i < g.starts[o + 1]; ++i) {
            const Link& l = g.links[i];
            out.push_back(LinkRow{std::string(l.key), std::string(g.owners[o]), l.version, l.digest, l.derived});
        }
    return out;
}

PreparedCheck LineageImpl::group(std::vector<LinkRow> links) {
    PreparedCheck p;
    for (size_t i = 0; i < links.size();) {
        size_t end = i;
        while (end < links.size() && links[end].owner == links[i].owner) ++end;
        OwnerGroup g;
        g.owner = links[i].owner;
        g.links.assign(std::make_move_iterator(links.begin() + i), std::make_move_iterator(links.begin() + end));
        QueryEncoder enc(g.query, g.links.size());
        for (const LinkRow& l : g.links) enc.add(l.key, l.version);
        p.groups.push_back(std::move(g));
        i = end;
    }
    return p;
}

PreparedCheck LineageImpl::prepare(std::string_view key, const Scope* scope) { return group(frontier(key, scope)); }

PreparedCheck LineageImpl::prepare_all() {
    std::vector<LinkRow> links;
    if (present_) {
        ReadTxn t(env_);
        std::unordered_map<uint32_t, std::string> owners;
        Cursor c(t.get(), db_.keys);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            if (v.mv_size != sizeof(KeyRec)) throw Corrupt("a lineage key record is damaged");
            KeyRec r = load<KeyRec>(v.mv_data);
            if (r.head == 0) continue;
            auto it = owners.find(r.owner);
            if (it == owners.end()) it = owners.emplace(r.owner, std::string(owner_name(t.get(), r.owner))).first;
            LinkRow l;
            l.key = std::string(view(k));
            l.owner = it->second;
            l.version = r.head;
            version_digest(t.get(), r.id, r.head, l.digest);
            links.push_back(std::move(l));
        }
    }
    std::sort(links.begin(), links.end(), [](const LinkRow& a, const LinkRow& b) {
        return a.owner != b.owner ? a.owner < b.owner : a.key < b.key;
    });
    return group(std::move(links));
}

}  // namespace agentsensus
