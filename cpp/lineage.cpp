#include "lineage.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "bytes.hpp"
#include "errors.hpp"
#include "limits.hpp"
#include "schema.hpp"

namespace agentsensus {

namespace {

// Tables: their keys, values and invariants are mapped in schema.hpp.
constexpr const char* kKeys = kLineageKeysTable.name;          // key name -> KeyRec
constexpr const char* kOwners = kLineageOwnersTable.name;      // 'n'+name -> u32 id; 'i'+Be32 id -> name
constexpr const char* kVersions = kLineageVersionsTable.name;  // (key, version) -> VersionRec
constexpr const char* kValues = kLineageValuesTable.name;      // (key, version) -> value bytes
constexpr const char* kMeta = kLineageMetaTable.name;          // counters

// VersionRec: digest[16] kind:u8 n:u32, then n inputs of
// owner:u32 version:u64 digest[16] derived:u8 name_len:u16 name.
// Input names are stored inline so a frontier walk needs no lookup per link.
constexpr size_t kVersionHeader = kValueDigestBytes + 1 + 4;
constexpr size_t kMinInputEntry = 4 + 8 + kValueDigestBytes + 1 + 2;  // an input with an empty name

// Thrown to roll back a dry run.
struct DryRun {};

struct VersionKey {
    unsigned char b[12];
    VersionKey(uint32_t key, uint64_t version) {
        Be32 k(key);
        Be64 v(version);
        std::memcpy(b, k.b, 4);
        std::memcpy(b + 4, v.b, 8);
    }
    MDB_val mv() const { return val(b, sizeof b); }
};

struct ParsedVersion {
    ValueDigest digest{};
    uint8_t kind = 0;
    uint32_t n = 0;
    std::string_view inputs;  // the raw input entries
};

bool parse_version(const MDB_val& v, ParsedVersion& out) {
    Reader r(v.mv_data, v.mv_size);
    std::string_view d;
    if (!r.get_bytes(kValueDigestBytes, d) || !r.get(out.kind) || !r.get(out.n)) return false;
    std::memcpy(out.digest.data(), d.data(), kValueDigestBytes);
    out.inputs = r.rest();
    return true;
}

struct InputEntry {
    uint32_t owner;
    uint64_t version;
    ValueDigest digest;
    uint8_t derived;
    std::string_view name;
};

// Iterates the input entries of a version; false at the end, throws Corrupt
// on a short record.
class InputReader {
public:
    explicit InputReader(std::string_view s) : r_(s.data(), s.size()) {}
    bool next(InputEntry& e) {
        if (r_.rest().empty()) return false;
        std::string_view d;
        uint16_t len = 0;
        if (!r_.get(e.owner) || !r_.get(e.version) || !r_.get_bytes(kValueDigestBytes, d) || !r_.get(e.derived) ||
            !r_.get(len) || !r_.get_bytes(len, e.name))
            throw Corrupt("a lineage version record is truncated");
        std::memcpy(e.digest.data(), d.data(), kValueDigestBytes);
        return true;
    }

private:
    Reader r_;
};

void check_name(std::string_view s, size_t limit, const char* what) {
    if (s.empty()) throw InvalidArgument(std::string(what) + " must be a non-empty string");
    if (s.size() > limit)
        throw InvalidArgument(std::string(what) + " is " + std::to_string(s.size()) + " bytes; the limit is " +
                              std::to_string(limit));
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

// ------------------------------------------------------------------- opening

Lineage::Lineage(Env& env) : env_(env) {
    if (!env.readonly()) {
        db_.keys = env.open_db(kKeys, 0);
        db_.owners = env.open_db(kOwners, 0);
        db_.versions = env.open_db(kVersions, 0);
        db_.values = env.open_db(kValues, 0);
        db_.meta = env.open_db(kMeta, 0);
        present_ = true;
        return;
    }
    // Read-only: a store that never had lineage has no tables, and that is
    // an empty lineage, not an error (Env::open_db would call it corrupt).
    for (;;) {
        std::shared_lock<std::shared_mutex> lock(env.resize_mutex());
        MDB_txn* txn = nullptr;
        int rc = mdb_txn_begin(env.raw(), nullptr, MDB_RDONLY, &txn);
        if (rc == MDB_MAP_RESIZED) {
            lock.unlock();
            env.adopt_resize();
            continue;
        }
        if (rc) throw_lmdb(rc, "mdb_txn_begin(lineage)");
        MDB_dbi probe;
        rc = mdb_dbi_open(txn, kKeys, 0, &probe);
        mdb_txn_abort(txn);
        if (rc == MDB_NOTFOUND) return;
        if (rc) throw_lmdb(rc, "mdb_dbi_open(lin_keys)");
        break;
    }
    db_.keys = env.open_db(kKeys, 0);
    db_.owners = env.open_db(kOwners, 0);
    db_.versions = env.open_db(kVersions, 0);
    db_.values = env.open_db(kValues, 0);
    db_.meta = env.open_db(kMeta, 0);
    present_ = true;
}

// ------------------------------------------------------------------- lookups

std::optional<Lineage::KeyRec> Lineage::key_rec(MDB_txn* txn, std::string_view key) {
    if (!present_) return std::nullopt;
    MDB_val v;
    if (!get(txn, db_.keys, val(key), v)) return std::nullopt;
    if (v.mv_size != sizeof(KeyRec)) throw Corrupt("lineage key " + quoted(key) + " has a damaged record");
    return load<KeyRec>(v.mv_data);
}

std::optional<uint32_t> Lineage::owner_id(MDB_txn* txn, std::string_view owner) {
    if (!present_) return std::nullopt;
    char k[1 + kMaxOwnerBytes];                              // no allocation: a check asks once per owner
    if (owner.size() > kMaxOwnerBytes) return std::nullopt;  // longer names are never stored
    k[0] = 'n';
    std::memcpy(k + 1, owner.data(), owner.size());
    MDB_val v;
    if (!get(txn, db_.owners, val(k, 1 + owner.size()), v)) return std::nullopt;
    if (v.mv_size != 4) throw Corrupt("lineage owner " + quoted(owner) + " has a damaged record");
    return load<uint32_t>(v.mv_data);
}

std::string_view Lineage::owner_name(MDB_txn* txn, uint32_t id) {
    unsigned char k[5] = {'i'};
    Be32 b(id);
    std::memcpy(k + 1, b.b, 4);
    MDB_val v;
    if (!get(txn, db_.owners, val(k, 5), v)) throw Corrupt("lineage owner id " + std::to_string(id) + " is missing");
    return view(v);
}

bool Lineage::version_digest(MDB_txn* txn, uint32_t key, uint64_t version, ValueDigest& out) {
    MDB_val v;
    if (!get(txn, db_.versions, VersionKey(key, version).mv(), v)) return false;
    if (v.mv_size < kValueDigestBytes) throw Corrupt("a lineage version record is truncated");
    std::memcpy(out.data(), v.mv_data, kValueDigestBytes);
    return true;
}

KeyInfo Lineage::info(std::string_view key) {
    ReadTxn t(env_);
    auto rec = key_rec(t.get(), key);
    if (!rec) throw NotFound("no lineage key " + quoted(key));
    return KeyInfo{std::string(owner_name(t.get(), rec->owner)), rec->head};
}

std::string Lineage::value(std::string_view key, uint64_t version) {
    ReadTxn t(env_);
    auto rec = key_rec(t.get(), key);
    if (!rec) throw NotFound("no lineage key " + quoted(key));
    uint64_t ver = version ? version : rec->head;
    MDB_val v;
    if (!get(t.get(), db_.values, VersionKey(rec->id, ver).mv(), v))
        throw NotFound("key " + quoted(key) + " has no version " + std::to_string(ver) + " here (head is " +
                       std::to_string(rec->head) + ")");
    return std::string(view(v));
}

std::vector<std::string> Lineage::keys() {
    std::vector<std::string> out;
    if (!present_) return out;
    ReadTxn t(env_);
    Cursor c(t.get(), db_.keys);
    MDB_val k, v;
    for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) out.emplace_back(view(k));
    return out;
}

std::vector<VersionRow> Lineage::versions(std::string_view key) {
    ReadTxn t(env_);
    auto rec = key_rec(t.get(), key);
    if (!rec) throw NotFound("no lineage key " + quoted(key));
    std::vector<VersionRow> out;
    Cursor c(t.get(), db_.versions);
    VersionKey first(rec->id, 0);
    MDB_val k = first.mv(), v;
    for (bool ok = c.op(k, v, MDB_SET_RANGE); ok; ok = c.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 12) throw Corrupt("a lineage version key is damaged");
        if (std::memcmp(k.mv_data, first.b, 4) != 0) break;  // the next key's versions
        ParsedVersion pv;
        if (!parse_version(v, pv) || pv.kind > LineageOp::observe) throw Corrupt("a lineage version record is damaged");
        VersionRow row;
        row.version = read_be64(static_cast<const unsigned char*>(k.mv_data) + 4);
        row.kind = static_cast<LineageOp::Kind>(pv.kind);
        row.digest = pv.digest;
        InputReader in(pv.inputs);
        InputEntry e;
        while (in.next(e)) row.inputs.emplace_back(std::string(e.name), e.version);
        MDB_val value;
        if (get(t.get(), db_.values, k, value)) row.value.assign(view(value));
        out.push_back(std::move(row));
    }
    return out;
}

// ------------------------------------------------------------------- writes

uint64_t Lineage::next_counter(MDB_txn* txn, const char* name) {
    MDB_val v;
    uint64_t next = 1;
    if (get(txn, db_.meta, val(name, std::strlen(name)), v)) {
        if (v.mv_size != 8) throw Corrupt(std::string("lineage counter ") + name + " is damaged");
        next = load<uint64_t>(v.mv_data);
    }
    uint64_t after = next + 1;
    put(txn, db_.meta, val(name, std::strlen(name)), val(&after, 8));
    return next;
}

uint32_t Lineage::ensure_owner(MDB_txn* txn, std::string_view owner) {
    if (auto id = owner_id(txn, owner)) return *id;
    uint64_t next = next_counter(txn, kLineageNextOwner.name);
    if (next > UINT32_MAX) throw Error("too many lineage owners");
    uint32_t id = static_cast<uint32_t>(next);
    std::string k = "n";
    k.append(owner);
    put(txn, db_.owners, val(k), val(&id, 4));
    unsigned char ik[5] = {'i'};
    Be32 b(id);
    std::memcpy(ik + 1, b.b, 4);
    put(txn, db_.owners, val(ik, 5), val(owner));
    return id;
}

uint64_t Lineage::apply_one(MDB_txn* txn, const LineageOp& op) {
    check_name(op.key, kMaxKeyBytes, "key");
    check_name(op.owner, kMaxOwnerBytes, "owner");
    if (op.value.size() > kMaxValueBytes)
        throw InvalidArgument("value of " + quoted(op.key) + " is " + std::to_string(op.value.size()) +
                              " bytes; the limit is " + std::to_string(kMaxValueBytes));

    // Inputs first: nothing about the key is touched before they validate.
    struct Resolved {
        std::string_view name;
        uint32_t owner;
        uint64_t version;
        ValueDigest digest;
        uint8_t derived;
    };
    std::vector<Resolved> inputs;
    if (op.kind == LineageOp::derive) {
        if (op.inputs.empty())
            throw InvalidArgument("inputs of " + quoted(op.key) + " is empty: a derived item needs at least one input");
        if (op.inputs.size() > kMaxInputs)
            throw InvalidArgument("inputs of " + quoted(op.key) + " has " + std::to_string(op.inputs.size()) +
                                  " entries; the limit is " + std::to_string(kMaxInputs));
        inputs.reserve(op.inputs.size());
        for (const auto& [name, version] : op.inputs) {
            check_name(name, kMaxKeyBytes, "an input key");
            auto rec = key_rec(txn, name);
            if (!rec) throw NotFound("input " + quoted(name) + " of " + quoted(op.key) + " does not exist");
            if (version == 0) throw InvalidArgument("input " + quoted(name) + ": versions start at 1, got 0");
            MDB_val v;
            if (!get(txn, db_.versions, VersionKey(rec->id, version).mv(), v))
                throw NotFound("input " + quoted(name) + " of " + quoted(op.key) + " has no version " +
                               std::to_string(version) + " (head is " + std::to_string(rec->head) + ")");
            ParsedVersion pv;
            if (!parse_version(v, pv)) throw Corrupt("a lineage version record is truncated");
            inputs.push_back(Resolved{name, rec->owner, version, pv.digest, uint8_t(pv.n > 0 ? 1 : 0)});
        }
        std::sort(inputs.begin(), inputs.end(), [](const Resolved& a, const Resolved& b) { return a.name < b.name; });
        for (size_t i = 1; i < inputs.size(); ++i)
            if (inputs[i].name == inputs[i - 1].name)
                throw InvalidArgument("input " + quoted(inputs[i].name) + " is named twice");
    }
    if (op.kind == LineageOp::observe && op.version == 0)
        throw InvalidArgument("observed version of " + quoted(op.key) + " must be at least 1");

    uint32_t owner = ensure_owner(txn, op.owner);
    auto rec = key_rec(txn, op.key);
    KeyRec r{};
    if (rec) {
        r = *rec;
        if (r.owner != owner)
            throw InvalidArgument("key " + quoted(op.key) + " is owned by " + quoted(owner_name(txn, r.owner)) +
                                  ", not " + quoted(op.owner));
    } else {
        uint64_t id = next_counter(txn, kLineageNextKey.name);
        if (id > UINT32_MAX) throw Error("too many lineage keys");
        r = KeyRec{static_cast<uint32_t>(id), owner, 0};
    }

    uint64_t version;
    if (op.restore) {
        version = op.version;
        ValueDigest have;
        if (version == 0) throw InvalidArgument("restored version of " + quoted(op.key) + " must be at least 1");
        if (version_digest(txn, r.id, version, have))
            throw InvalidArgument("version " + std::to_string(version) + " of " + quoted(op.key) +
                                  " is already recorded");
        if (version > r.head) r.head = version;
    } else if (op.kind == LineageOp::observe) {
        version = op.version;
        ValueDigest have;
        if (version_digest(txn, r.id, version, have)) {
            if (have != op.digest)
                throw InvalidArgument("version " + std::to_string(version) + " of " + quoted(op.key) +
                                      " is already recorded with other content");
            return version;  // seen before: nothing to do
        }
        if (version > r.head) r.head = version;
    } else {
        version = r.head + 1;
        r.head = version;
    }

    std::string rec_bytes;
    rec_bytes.reserve(kVersionHeader + inputs.size() * 48);
    rec_bytes.append(reinterpret_cast<const char*>(op.digest.data()), kValueDigestBytes);
    append<uint8_t>(rec_bytes, static_cast<uint8_t>(op.kind));
    append<uint32_t>(rec_bytes, static_cast<uint32_t>(inputs.size()));
    for (const Resolved& in : inputs) {
        append<uint32_t>(rec_bytes, in.owner);
        append<uint64_t>(rec_bytes, in.version);
        rec_bytes.append(reinterpret_cast<const char*>(in.digest.data()), kValueDigestBytes);
        append<uint8_t>(rec_bytes, in.derived);
        append<uint16_t>(rec_bytes, static_cast<uint16_t>(in.name.size()));
        rec_bytes.append(in.name);
    }
    VersionKey vk(r.id, version);
    put(txn, db_.versions, vk.mv(), val(rec_bytes));
    put(txn, db_.values, vk.mv(), val(op.value));
    put(txn, db_.keys, val(op.key), val(&r, sizeof r));
    return version;
}

std::vector<uint64_t> Lineage::apply(const std::vector<LineageOp>& ops, bool commit) {
    if (!present_) throw Error("store is open read-only");
    std::vector<uint64_t> out;
    try {
        env_.write([&](MDB_txn* txn) {
            out.clear();  // the map may grow and fn run again
            for (const LineageOp& op : ops) out.push_back(apply_one(txn, op));
            if (!commit) throw DryRun{};
        });
    } catch (const DryRun&) {
    }
    return out;
}

// ------------------------------------------------------------------- frontier

void Lineage::walk(MDB_txn* txn, std::string_view key, const Scope* scope, Reached& out) {
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

std::vector<uint32_t> Lineage::rank_owners(MDB_txn* txn, const std::vector<uint32_t>& ids,
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
bool Lineage::sort_within_owners(Grouped& g) {
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
void Lineage::drop_duplicates(Grouped& g) {
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

void Lineage::group_by_owner(MDB_txn* txn, Reached& r, Grouped& out) {
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

void Lineage::walk_grouped(MDB_txn* txn, std::string_view key, const Scope* scope, Grouped& out) {
    Reached r;
    walk(txn, key, scope, r);
    group_by_owner(txn, r, out);
}

std::vector<LinkRow> Lineage::frontier(std::string_view key, const Scope* scope) {
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

PreparedCheck Lineage::group(std::vector<LinkRow> links) {
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

PreparedCheck Lineage::prepare(std::string_view key, const Scope* scope) { return group(frontier(key, scope)); }

PreparedCheck Lineage::prepare_all() {
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

// ------------------------------------------------------------------- heads

void Lineage::Ask::decode(std::string_view query) {
    if (!decode_query_entries(query, entries, kMaxInputs * 16)) throw InvalidArgument("malformed head query");
    // Rebuild the front-coded keys into one buffer, sized first so the views
    // taken after stay valid.
    size_t total = 0;
    for (const QueryEntry& e : entries) total += e.shared + e.suffix.size();
    key_bytes.resize(total);
    char* base = key_bytes.data();
    size_t at = 0, prev = 0;
    for (const QueryEntry& e : entries) {
        std::memcpy(base + at, base + prev, e.shared);  // e.shared <= the previous key's length
        std::memcpy(base + at + e.shared, e.suffix.data(), e.suffix.size());
        prev = at;
        at += e.shared + e.suffix.size();
    }
    keys.clear();
    keys.reserve(entries.size());
    size_t off = 0;
    for (const QueryEntry& e : entries) {
        size_t len = e.shared + e.suffix.size();
        keys.emplace_back(key_bytes.data() + off, len);
        off += len;
    }
    heads.assign(entries.size(), HeadAnswer{});
}

void Lineage::answer_in(MDB_txn* txn, std::vector<Ask>& asks) {
    // The keys of every query in one key order, so one cursor walks the
    // table forward: queries come sorted, so few owners merge in linear time;
    // many are sorted together.
    struct Want {
        std::string_view key;
        uint32_t ask, i;
    };
    std::vector<Want> order;
    size_t n = 0;
    for (const Ask& a : asks) n += a.keys.size();
    order.reserve(n);
    if (asks.size() > 8) {
        for (uint32_t j = 0; j < asks.size(); ++j)
            for (uint32_t i = 0; i < asks[j].keys.size(); ++i) order.push_back(Want{asks[j].keys[i], j, i});
        std::sort(order.begin(), order.end(), [](const Want& x, const Want& y) { return x.key < y.key; });
    } else {
        std::vector<size_t> pos(asks.size(), 0);
        for (;;) {
            size_t best = asks.size();
            for (size_t j = 0; j < asks.size(); ++j)
                if (pos[j] < asks[j].keys.size() &&
                    (best == asks.size() || asks[j].keys[pos[j]] < asks[best].keys[pos[best]]))
                    best = j;
            if (best == asks.size()) break;
            uint32_t i = static_cast<uint32_t>(pos[best]++);
            order.push_back(Want{asks[best].keys[i], static_cast<uint32_t>(best), i});
        }
    }
    for (Ask& a : asks) a.owner_id = owner_id(txn, a.owner);

    // From where the last lookup left the cursor, one step forward may reach
    // the key (or prove it absent) without a seek. Correct for any order.
    Cursor c(txn, db_.keys);
    MDB_val ck, cv;
    bool at = false;  // the cursor sits on a valid entry
    for (const Want& w : order) {
        Ask& a = asks[w.ask];
        if (!a.owner_id) continue;  // an owner this store does not know: every key unknown
        bool found = false, absent = false;
        if (at) {
            int cmp = view(ck).compare(w.key);
            if (cmp == 0) {
                found = true;
            } else if (cmp < 0) {
                at = c.op(ck, cv, MDB_NEXT);
                if (at) {
                    cmp = view(ck).compare(w.key);
                    found = cmp == 0;
                    absent = cmp > 0;  // nothing lies between the two keys
                }
            }
        }
        if (!found && !absent) {
            ck = val(w.key);
            at = c.op(ck, cv, MDB_SET_RANGE);
            found = at && view(ck) == w.key;
        }
        if (!found) continue;  // unknown: the check blocks
        if (cv.mv_size != sizeof(KeyRec)) throw Corrupt("lineage key " + quoted(w.key) + " has a damaged record");
        KeyRec rec = load<KeyRec>(cv.mv_data);
        if (rec.owner != *a.owner_id || rec.head == 0) continue;
        HeadAnswer& h = a.heads[w.i];
        uint64_t recorded = a.entries[w.i].recorded;
        h.head = rec.head;
        if (rec.head != recorded && recorded != 0) {
            ValueDigest hd, rd;
            h.same = version_digest(txn, rec.id, rec.head, hd) && version_digest(txn, rec.id, recorded, rd) && hd == rd;
        }
    }
}

std::string Lineage::answer(std::string_view owner, std::string_view query) {
    std::vector<Ask> asks(1);
    asks[0].owner = owner;
    asks[0].decode(query);
    ReadTxn t(env_);
    answer_in(t.get(), asks);
    std::string out;
    encode_answer(asks[0].heads, out);
    return out;
}

namespace {

// Judges one owner's links against its answer (nullptr: none came) and adds
// what is stale to r. Links are LinkRow or Lineage::Link: key and version.
template <class L> void judge(const L* links, size_t n, std::string_view owner, size_t query_bytes,
                              const std::string* answer, std::vector<HeadAnswer>& a, CheckResult& r) {
    r.bytes += query_bytes;
    StaleWhy blanket = StaleWhy::no_answer;
    bool ok = false;
    if (answer) {
        r.bytes += answer->size();
        ok = decode_answer(*answer, n, a);
        if (!ok) blanket = StaleWhy::malformed;
    }
    for (size_t i = 0; i < n; ++i) {
        const L& l = links[i];
        if (!ok) {
            r.stale.push_back(StaleRow{std::string(l.key), std::string(owner), l.version, 0, blanket});
            continue;
        }
        const HeadAnswer& h = a[i];
        if (h.head == 0) {
            r.stale.push_back(StaleRow{std::string(l.key), std::string(owner), l.version, 0, StaleWhy::unknown});
        } else if (h.head != l.version && !h.same) {
            r.stale.push_back(StaleRow{std::string(l.key), std::string(owner), l.version, h.head, StaleWhy::moved});
        }
    }
}

}  // namespace

CheckResult Lineage::finish(const PreparedCheck& p, const std::vector<const std::string*>& answers) {
    if (answers.size() != p.groups.size()) throw InvalidArgument("one answer per owner is needed");
    CheckResult r;
    r.owners_asked = static_cast<uint32_t>(p.groups.size());
    std::vector<HeadAnswer> a;
    for (size_t g = 0; g < p.groups.size(); ++g) {
        const OwnerGroup& grp = p.groups[g];
        judge(grp.links.data(), grp.links.size(), grp.owner, grp.query.size(), answers[g], a, r);
    }
    r.current = r.stale.empty();
    return r;
}

CheckResult Lineage::check_local(std::string_view key, const Scope* scope) {
    // The whole exchange on one snapshot: encode each owner's query, answer
    // it from this store as the owner would (decode, look up, encode), then
    // judge the decoded answers. Keys stay views into the mapped pages.
    ReadTxn t(env_);
    Grouped w;
    walk_grouped(t.get(), key, scope, w);
    const size_t groups = w.owners.size();
    std::vector<std::string> queries(groups);
    std::vector<Ask> asks(groups);
    for (size_t g = 0; g < groups; ++g) {
        size_t bytes = 16;
        for (size_t i = w.starts[g]; i < w.starts[g + 1]; ++i) bytes += w.links[i].key.size() + 12;
        queries[g].reserve(bytes);
        QueryEncoder enc(queries[g], w.starts[g + 1] - w.starts[g]);
        for (size_t i = w.starts[g]; i < w.starts[g + 1]; ++i) enc.add(w.links[i].key, w.links[i].version);
        asks[g].owner = w.owners[g];
        asks[g].decode(queries[g]);
    }
    // Owners sharing this store are answered in one walk of its keys.
    answer_in(t.get(), asks);
    CheckResult r;
    r.owners_asked = static_cast<uint32_t>(groups);
    std::string answer;
    std::vector<HeadAnswer> a;
    for (size_t g = 0; g < groups; ++g) {
        encode_answer(asks[g].heads, answer);
        judge(w.links.data() + w.starts[g], w.starts[g + 1] - w.starts[g], w.owners[g], queries[g].size(), &answer, a,
              r);
    }
    r.current = r.stale.empty();
    return r;
}

}  // namespace agentsensus

// ------------------------------------------------------------------- verify

namespace agentsensus {

std::vector<std::string> Lineage::verify() {
    std::vector<std::string> out;
    if (!present_) return out;
    auto bad = [&](std::string s) {
        if (out.size() < 1000) out.push_back("lineage: " + std::move(s));
    };
    ReadTxn t(env_);
    MDB_txn* txn = t.get();
    auto counter = [&](const char* name) {
        MDB_val v;
        if (!get(txn, db_.meta, val(name, std::strlen(name)), v)) return uint64_t(1);
        if (v.mv_size != 8) {
            bad(std::string("counter ") + name + " is damaged");
            return uint64_t(1);
        }
        return load<uint64_t>(v.mv_data);
    };
    const uint64_t next_key = counter(kLineageNextKey.name), next_owner = counter(kLineageNextOwner.name);

    // Owners: names and ids in both directions.
    std::unordered_map<uint32_t, std::string> owners;
    {
        Cursor c(txn, db_.owners);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            std::string_view key = view(k);
            if (key.size() == 5 && key[0] == 'i') {
                uint32_t id = read_be32(key.data() + 1);
                owners[id] = std::string(view(v));
                if (id >= next_owner) bad("owner id " + std::to_string(id) + " is beyond the owner counter");
                std::string back = "n" + std::string(view(v));
                MDB_val b;
                if (!get(txn, db_.owners, val(back), b) || b.mv_size != 4 || load<uint32_t>(b.mv_data) != id)
                    bad("owner " + quoted(view(v)) + " is missing from the owner-name index");
            } else if (key.empty() || key[0] != 'n' || v.mv_size != 4) {
                bad("an owner entry is damaged");
            }
        }
    }

    // Keys: each head names a stored version, with a value, and nothing newer.
    std::unordered_map<uint32_t, std::pair<std::string, KeyRec>> keys;  // by key id
    std::unordered_map<std::string, KeyRec> by_name;
    {
        Cursor c(txn, db_.keys);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            std::string name(view(k));
            if (v.mv_size != sizeof(KeyRec)) {
                bad("key " + quoted(name) + " has a damaged record");
                continue;
            }
            KeyRec r = load<KeyRec>(v.mv_data);
            if (!owners.count(r.owner))
                bad("key " + quoted(name) + " is owned by unknown owner id " + std::to_string(r.owner));
            if (r.id >= next_key) bad("key " + quoted(name) + " has an id beyond the key counter");
            if (!keys.emplace(r.id, std::make_pair(name, r)).second)
                bad("key " + quoted(name) + " shares its id with another key");
            by_name[name] = r;
            if (r.head == 0) continue;
            MDB_val hv;
            if (!get(txn, db_.versions, VersionKey(r.id, r.head).mv(), hv))
                bad("key " + quoted(name) + " has head " + std::to_string(r.head) + ", but no such version is stored");
            if (!get(txn, db_.values, VersionKey(r.id, r.head).mv(), hv))
                bad("key " + quoted(name) + " has no value for its head " + std::to_string(r.head));
        }
    }

    // Versions: of a known key, not past its head, with a value, and links
    // to versions that exist, under their keys' owners.
    {
        Cursor c(txn, db_.versions);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 12) {
                bad("a version entry has a damaged key");
                continue;
            }
            uint32_t kid = read_be32(k.mv_data);
            uint64_t ver = read_be64(static_cast<const char*>(k.mv_data) + 4);
            auto it = keys.find(kid);
            if (it == keys.end()) {
                bad("version " + std::to_string(ver) + " belongs to unknown key id " + std::to_string(kid));
                continue;
            }
            const std::string& name = it->second.first;
            std::string at = "version " + std::to_string(ver) + " of " + quoted(name);
            if (ver == 0 || ver > it->second.second.head)
                bad(at + " is past the key's head " + std::to_string(it->second.second.head));
            MDB_val value;
            if (!get(txn, db_.values, k, value)) bad(at + " has no value");
            ParsedVersion pv;
            if (!parse_version(v, pv)) {
                bad(at + " is truncated");
                continue;
            }
            try {
                InputReader ir(pv.inputs);
                InputEntry e;
                uint32_t n = 0;
                while (ir.next(e)) {
                    ++n;
                    std::string link = at + " links to " + quoted(e.name) + " version " + std::to_string(e.version);
                    auto in = by_name.find(std::string(e.name));
                    if (in == by_name.end()) {
                        bad(link + ", an unknown key");
                        continue;
                    }
                    if (in->second.owner != e.owner) bad(link + " under another owner than the key's");
                    MDB_val iv;
                    if (!get(txn, db_.versions, VersionKey(in->second.id, e.version).mv(), iv)) {
                        bad(link + ", which is not stored");
                        continue;
                    }
                    ParsedVersion ip;
                    if (parse_version(iv, ip) && (ip.n > 0) != (e.derived != 0))
                        bad(link + " with the wrong derived flag");
                    if (parse_version(iv, ip) && ip.digest != e.digest) bad(link + " with another digest than it has");
                }
                if (n != pv.n) bad(at + " counts " + std::to_string(pv.n) + " inputs but holds " + std::to_string(n));
            } catch (const DamagedPage&) {
                throw;  // the transaction is unusable: report the page
            } catch (const Corrupt&) {
                bad(at + " has a truncated input list");
            }
        }
    }
    {
        Cursor c(txn, db_.values);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            MDB_val probe;
            if (k.mv_size != 12 || !get(txn, db_.versions, k, probe)) bad("a stored value belongs to no version");
        }
    }
    return out;
}

}  // namespace agentsensus
