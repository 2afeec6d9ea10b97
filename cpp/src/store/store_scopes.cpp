// Scopes: a record belongs to the scope of the deposit that created it, and
// a statement meets (as exact duplicate, candidate, judge request or commit
// conflict) only records of its own scope. The tables are in schema.hpp
// (kScopesTable and after); the default scope (id 0, name "") has no rows,
// so a store written before scopes existed has every record in it.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "agentsensus/limits.hpp"
#include "agentsensus/visible_text.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

namespace {

void set_id_bit(std::vector<uint64_t>& bits, uint64_t id) {
    size_t w = id >> 6;
    if (w >= bits.size()) bits.resize(std::max(w + 1, bits.size() * 2), 0);
    bits[w] |= uint64_t(1) << (id & 63);
}

bool better_hit(const Hit& a, const Hit& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); }

// Every u64 under one key of a dup table, ascending.
std::vector<uint64_t> dup_ids(MDB_txn* txn, MDB_dbi dbi, MDB_val key) {
    std::vector<uint64_t> out;
    Cursor c(txn, dbi);
    MDB_val v;
    bool more = c.op(key, v, MDB_SET);
    if (more) more = c.op(key, v, MDB_FIRST_DUP);
    while (more) {
        if (v.mv_size != 8) throw Corrupt("the scope index is damaged");
        out.push_back(load<uint64_t>(v.mv_data));
        more = c.op(key, v, MDB_NEXT_DUP);
    }
    return out;
}

// A scope name is checked as an owner name is: 1 to kMaxOwnerBytes bytes, no
// control character, a visible one. "" is the default scope.
void check_scope_name(std::string_view name) {
    if (name.empty()) return;
    if (name.size() > kMaxOwnerBytes)
        throw InvalidArgument("scope must be at most " + std::to_string(kMaxOwnerBytes) + " bytes");
    if (has_control(name)) throw InvalidArgument("scope has a control character");
    if (!has_visible(name)) throw InvalidArgument("scope has no visible character");
}

// kOverfetch as recall's plan (store_recall.cpp). kScanPerCandidate is the
// f32 graph's measured cost; recall's plan uses the int8 graph's 100, so a
// deposit's scope is scanned exactly up to twice the size an owner would be.
constexpr size_t kOverfetch = 3, kScanPerCandidate = 200;

}  // namespace

bool StoreImpl::ScopeView::contains(uint64_t id) const {
    if (!filtered) return true;
    size_t w = id >> 6;
    return w < bits.size() && (bits[w] >> (id & 63)) & 1;
}

uint32_t StoreImpl::record_scope(MDB_txn* txn, uint64_t id) {
    if (!has_scopes_) return 0;
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(txn, db_.scopes, val(k.b, 8), v)) return 0;
    if (v.mv_size != 4) throw Corrupt("the scope of record " + std::to_string(id) + " is damaged");
    return load<uint32_t>(v.mv_data);
}

std::optional<uint32_t> StoreImpl::scope_id(MDB_txn* txn, std::string_view name) {
    if (name.empty()) return 0u;
    if (!has_scopes_ || name.size() > kMaxOwnerBytes) return std::nullopt;
    MDB_val v;
    if (!agentsensus::get(txn, db_.scopes_by_name, val(name), v)) return std::nullopt;
    if (v.mv_size != 4) throw Corrupt("the scope name index is damaged");
    return load<uint32_t>(v.mv_data);
}

std::string StoreImpl::scope_name(MDB_txn* txn, uint32_t sid) {
    if (sid == 0) return std::string();
    Be32 k(sid);
    MDB_val v;
    if (!agentsensus::get(txn, db_.scope_names, val(k.b, 4), v))
        throw Corrupt("scope id " + std::to_string(sid) + " has no name");
    return std::string(view(v));
}

uint32_t StoreImpl::ensure_scope(MDB_txn* txn, std::string_view name) {
    check_scope_name(name);
    if (auto s = scope_id(txn, name)) return *s;
    uint64_t next = meta_u64(txn, kMetaNextScope, 1);
    if (next > 0xffffffffu) throw Error("too many distinct scopes");
    uint32_t id = static_cast<uint32_t>(next);
    Be32 k(id);
    put(txn, db_.scope_names, val(k.b, 4), val(name));
    put(txn, db_.scopes_by_name, val(name), val(&id, 4));
    set_meta_u64(txn, kMetaNextScope, next + 1);
    return id;
}

void StoreImpl::put_scope(MDB_txn* txn, uint64_t id, uint32_t sid) {
    if (sid == 0) return;  // the default scope has no rows
    Be64 k(id);
    Be32 sk(sid);
    put(txn, db_.scopes, val(k.b, 8), val(&sid, 4));
    put(txn, db_.scoped, val(sk.b, 4), val(&id, 8), MDB_NODUPDATA);
}

void StoreImpl::drop_scope(MDB_txn* txn, uint64_t id) {
    uint32_t sid = record_scope(txn, id);
    if (sid == 0) return;
    Be64 k(id);
    Be32 sk(sid);
    MDB_val idv = val(&id, 8);
    del(txn, db_.scoped, val(sk.b, 4), &idv);
    del(txn, db_.scopes, val(k.b, 8));
}

StoreImpl::ScopeView StoreImpl::scope_view(MDB_txn* txn, std::string_view scope) {
    ScopeView sv;
    std::optional<uint32_t> sid = scope_id(txn, scope);
    const bool named_records = has_scopes_ && entries(txn, db_.scopes) > 0;
    if (sid && *sid == 0 && !named_records) return sv;  // the default scope is the whole store
    sv.filtered = true;
    if (!sid) return sv;  // a scope never used: it has no records
    if (*sid != 0) {
        Be32 sk(*sid);
        sv.ids = dup_ids(txn, db_.scoped, val(sk.b, 4));
    } else {
        // The default scope: every record without a scope row (both tables
        // walk in id order).
        Cursor rc(txn, db_.records), sc(txn, db_.scopes);
        MDB_val rk, rv, sk, sv2;
        bool rmore = rc.op(rk, rv, MDB_FIRST), smore = sc.op(sk, sv2, MDB_FIRST);
        while (rmore) {
            if (rk.mv_size != 8) throw Corrupt("record table is damaged");
            uint64_t id = read_be64(rk.mv_data);
            while (smore && (sk.mv_size != 8 || read_be64(sk.mv_data) < id)) smore = sc.op(sk, sv2, MDB_NEXT);
            if (!(smore && read_be64(sk.mv_data) == id)) sv.ids.push_back(id);
            rmore = rc.op(rk, rv, MDB_NEXT);
        }
    }
    for (uint64_t id : sv.ids) set_id_bit(sv.bits, id);
    return sv;
}

// As recall's plan (store_recall.cpp): search the whole graph for about
// kOverfetch * k / (the scope's share of the store) nearest and keep the
// scope's, widening when that leaves fewer than k, and scan the scope exactly
// when that is cheaper or the graph does not reach enough of them.
std::vector<Hit> StoreImpl::search_scope(const ScopeView& sv, const float* q, size_t k, size_t total) const {
    const size_t count = sv.ids.size();
    std::vector<Hit> hits;
    if (count == 0 || k == 0) return hits;
    size_t wanted = std::max(k, total ? (kOverfetch * k * total + count - 1) / count : k);
    auto cost = [&](size_t w) { return std::max(w, expansion_search_) * kScanPerCandidate; };
    if (count > exact_cutoff_ && cost(wanted) < count) {
        const size_t want = std::min(k, count);
        for (;; wanted *= 4) {
            hits = index_->search(q, wanted);
            hits.erase(std::remove_if(hits.begin(), hits.end(), [&](const Hit& h) { return !sv.contains(h.id); }),
                       hits.end());
            if (hits.size() >= want) {
                if (hits.size() > k) hits.resize(k);
                return hits;
            }
            if (wanted >= total || cost(wanted * 4) >= count) break;
        }
    }
    // What the index lacks is newer than prepare's seq: the commit re-checks it.
    std::vector<uint64_t> absent;
    hits = index_->scan(q, sv.ids.data(), sv.ids.size(), k, absent);
    return hits;
}

std::string StoreImpl::scope_of(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Be64 k(id);
    MDB_val v;
    if (!agentsensus::get(t.get(), db_.records, val(k.b, 8), v)) throw NotFound("no record " + std::to_string(id));
    return scope_name(t.get(), record_scope(t.get(), id));
}

std::vector<std::string> StoreImpl::scopes_of(const std::vector<uint64_t>& ids) {
    check_open();
    ReadTxn t(*env_);
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (uint64_t id : ids) out.push_back(scope_name(t.get(), record_scope(t.get(), id)));
    return out;
}

std::vector<std::string> StoreImpl::scope_names() {
    check_open();
    std::vector<std::string> out;
    if (!has_scopes_) return out;
    ReadTxn t(*env_);
    Cursor c(t.get(), db_.scope_names);  // keyed by big-endian id: first-seen order
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) out.emplace_back(view(v));
    return out;
}

Stats StoreImpl::stats(std::string_view scope) {
    check_open();
    check_scope_name(scope);
    ReadTxn t(*env_);
    Stats s;
    std::optional<uint32_t> sid = scope_id(t.get(), scope);
    if (!sid) return s;  // a scope never used
    ScopeView sv = scope_view(t.get(), scope);
    std::vector<uint64_t> ids = sv.ids;
    if (!sv.filtered) {  // the default scope is the whole store
        Cursor c(t.get(), db_.records);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT))
            if (k.mv_size == 8) ids.push_back(read_be64(k.mv_data));
    }
    std::set<uint32_t> owners;
    std::set<uint64_t> deposits;
    for (uint64_t id : ids) {
        Be64 k(id);
        MDB_val rv;
        RecordHeader h;
        std::string_view text;
        if (!agentsensus::get(t.get(), db_.records, val(k.b, 8), rv) || !decode_record(rv, h, text)) continue;
        ++s.records;
        deposits.insert(h.deposit);
        size_t n = 0;
        {
            Cursor c(t.get(), db_.owners);
            MDB_val key = val(k.b, 8), v;
            for (bool more = c.op(key, v, MDB_SET); more; more = c.op(key, v, MDB_NEXT_DUP)) {
                if (v.mv_size != 4) throw Corrupt("the owner set of record " + std::to_string(id) + " is damaged");
                owners.insert(load<uint32_t>(v.mv_data));
                ++n;
            }
        }
        if (n >= 2) ++s.shared;
        s.max_owners = std::max<uint64_t>(s.max_owners, n);
        if (!neighbors_in(t.get(), id).empty()) ++s.linked;
        Cursor m(t.get(), db_.rmerges);
        MDB_val mk = val(k.b, 8), mv;
        if (m.op(mk, mv, MDB_SET)) {
            size_t count = 0;
            int rc = mdb_cursor_count(m.get(), &count);
            if (rc) throw_lmdb(rc, "mdb_cursor_count");
            s.merges += count;
        }
    }
    s.deposits = deposits.size();
    s.owners = owners.size();
    return s;
}

std::vector<Row> StoreImpl::recall_scoped(const std::string& owner, const std::string& scope, const float* query,
                                          size_t k, bool expand, const RecallFilter& filter, float threshold) {
    check_open();
    std::vector<float> q(dim_);
    prepare_vector(query, q.data());
    if (k == 0) return {};
    sync_index();
    std::shared_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    return recall_scoped_in(t.get(), owner, scope, q.data(), k, expand, filter, threshold);
}

// recall_scoped on txn's snapshot. Holds index_mu_ shared.
std::vector<Row> StoreImpl::recall_scoped_in(MDB_txn* txn, const std::string& owner, const std::string& scope,
                                             const float* q, size_t k, bool expand, const RecallFilter& given,
                                             float threshold) {
    const RecallFilter filter = versioned(txn, given);  // current records only (store_versions.cpp)
    std::optional<uint32_t> oid = owner_id(txn, owner);
    std::optional<uint32_t> sid = scope_id(txn, scope);
    if (!oid || !sid) return {};
    // The owner's records of the scope, filtered before scoring (the k best
    // scored are the k best that pass).
    std::vector<uint64_t> ids = owned_ids(txn, *oid), absent;
    ids.erase(std::remove_if(ids.begin(), ids.end(),
                             [&](uint64_t id) {
                                 return record_scope(txn, id) != *sid ||
                                        (!filter.empty() && !passes(txn, *oid, id, filter));
                             }),
              ids.end());
    std::vector<Hit> hits = index_->scan(q, ids.data(), ids.size(), k, absent);
    std::vector<float> buf(dim_);
    for (uint64_t id : absent)
        if (vector_of(txn, id, buf.data())) hits.push_back(Hit{id, similarity(metric_, q, buf.data(), dim_)});
    size_t top = std::min(k, hits.size());
    std::partial_sort(hits.begin(), hits.begin() + top, hits.end(), better_hit);
    hits.resize(top);
    hits.erase(std::remove_if(hits.begin(), hits.end(), [&](const Hit& h) { return h.score < threshold; }), hits.end());
    // Expansion rows are of the same scope: edges never cross scopes (I14).
    return recall_rows(txn, *oid, hits, expand, filter);
}

// I14: every scope row belongs to a live record and names a known scope,
// scoped mirrors scopes, names and ids are a bijection below next_scope, and
// every affiliation edge joins two records of one scope.
void StoreImpl::verify_scopes(MDB_txn* txn, const std::set<uint64_t>& records,
                              const std::function<void(std::string)>& bad) {
    if (!has_scopes_) return;
    const uint64_t next_scope = meta_u64(txn, kMetaNextScope, 1);
    std::unordered_map<uint32_t, std::string> names;
    {
        Cursor c(txn, db_.scope_names);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 4) {
                bad("a scope-name key is damaged");
                continue;
            }
            uint32_t sid = read_be32(k.mv_data);
            names[sid] = std::string(view(v));
            MDB_val back;
            if (sid == 0 || sid >= next_scope) bad("scope id " + std::to_string(sid) + " is beyond the scope counter");
            if (v.mv_size == 0 || !agentsensus::get(txn, db_.scopes_by_name, v, back) || back.mv_size != 4 ||
                load<uint32_t>(back.mv_data) != sid)
                bad("scope '" + std::string(view(v)) + "' (id " + std::to_string(sid) +
                    ") is missing from the scope name index");
        }
    }
    {
        Cursor c(txn, db_.scopes_by_name);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT))
            if (v.mv_size != 4 || !names.count(load<uint32_t>(v.mv_data)))
                bad("scope name '" + std::string(view(k)) + "' points to no scope id");
    }
    std::unordered_map<uint64_t, uint32_t> of;  // record -> scope, for the records outside the default
    {
        Cursor c(txn, db_.scopes);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 8 || v.mv_size != 4) {
                bad("a scope row is damaged");
                continue;
            }
            uint64_t id = read_be64(k.mv_data);
            uint32_t sid = load<uint32_t>(v.mv_data);
            of[id] = sid;
            if (!records.count(id)) bad("a scope row names missing record " + std::to_string(id));
            if (!names.count(sid))
                bad("record " + std::to_string(id) + " is in scope id " + std::to_string(sid) + ", which has no name");
            Be32 sk(sid);
            MDB_val key = val(sk.b, 4), idv = val(&id, 8);
            Cursor sc(txn, db_.scoped);
            if (!sc.op(key, idv, MDB_GET_BOTH))
                bad("record " + std::to_string(id) + " is missing from the list of its scope");
        }
    }
    {
        Cursor c(txn, db_.scoped);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 4 || v.mv_size != 8) {
                bad("a scope list entry is damaged");
                continue;
            }
            uint64_t id = load<uint64_t>(v.mv_data);
            auto it = of.find(id);
            if (it == of.end() || it->second != read_be32(k.mv_data))
                bad("the list of scope id " + std::to_string(read_be32(k.mv_data)) + " names record " +
                    std::to_string(id) + ", which is not in it");
        }
    }
    auto scope_at = [&](uint64_t id) {
        auto it = of.find(id);
        return it == of.end() ? 0u : it->second;
    };
    Cursor c(txn, db_.edges);
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 8 || v.mv_size != 8) continue;  // I7 reports it
        uint64_t a = read_be64(k.mv_data), b = load<uint64_t>(v.mv_data);
        if (a < b && scope_at(a) != scope_at(b))
            bad("the edge between record " + std::to_string(a) + " and record " + std::to_string(b) +
                " crosses scopes");
    }
}

// Run by repair after it chose the records it keeps. A record whose scope row
// is damaged or names no scope cannot be placed: it is dropped, as putting it
// in the default scope would show it to that scope's statements. Edges across
// scopes go (both directions, before repair rebuilds the edges); the scope
// rows of the kept records stay and the derived tables are rebuilt.
void StoreImpl::repair_scopes(MDB_txn* txn, std::set<uint64_t>& keep) {
    std::map<uint32_t, std::string> names;
    {
        Cursor c(txn, db_.scope_names);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT))
            if (k.mv_size == 4 && v.mv_size > 0 && v.mv_size <= kMaxOwnerBytes)
                names[read_be32(k.mv_data)] = std::string(view(v));
    }
    // A name given to two ids keeps the lower one; records of the other cannot be placed.
    std::unordered_set<std::string> seen_names;
    for (auto it = names.begin(); it != names.end();)
        it = seen_names.insert(it->second).second && it->first != 0 ? std::next(it) : names.erase(it);
    std::map<uint64_t, uint32_t> rows;
    std::set<uint64_t> unplaceable;
    {
        Cursor c(txn, db_.scopes);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 8) continue;
            uint64_t id = read_be64(k.mv_data);
            if (v.mv_size == 4 && names.count(load<uint32_t>(v.mv_data)))
                rows[id] = load<uint32_t>(v.mv_data);
            else
                unplaceable.insert(id);
        }
    }
    for (uint64_t id : unplaceable) {
        rows.erase(id);
        if (!keep.erase(id)) continue;
        Be64 k(id);
        del(txn, db_.records, val(k.b, 8));
        del(txn, db_.vectors, val(k.b, 8));
    }
    int rc = mdb_drop(txn, db_.scopes, 0);
    if (!rc) rc = mdb_drop(txn, db_.scoped, 0);
    if (!rc) rc = mdb_drop(txn, db_.scopes_by_name, 0);
    if (!rc) rc = mdb_drop(txn, db_.scope_names, 0);
    if (rc) throw_lmdb(rc, "mdb_drop");
    uint32_t top = 0;
    for (auto& [sid, name] : names) {
        Be32 k(sid);
        put(txn, db_.scope_names, val(k.b, 4), val(name));
        put(txn, db_.scopes_by_name, val(name), val(&sid, 4));
        top = std::max(top, sid);
    }
    for (auto& [id, sid] : rows) {
        if (!keep.count(id)) continue;
        put_scope(txn, id, sid);
    }
    if (meta_u64(txn, kMetaNextScope, 1) <= top) set_meta_u64(txn, kMetaNextScope, uint64_t(top) + 1);
    // Edges across scopes: every direction found goes.
    auto scope_at = [&](uint64_t id) {
        auto it = rows.find(id);
        return it == rows.end() ? 0u : it->second;
    };
    std::vector<std::pair<uint64_t, uint64_t>> crossing;
    {
        Cursor c(txn, db_.edges);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 8 || v.mv_size != 8) continue;
            uint64_t a = read_be64(k.mv_data), b = load<uint64_t>(v.mv_data);
            if (scope_at(a) != scope_at(b)) crossing.emplace_back(a, b);
        }
    }
    for (auto& [a, b] : crossing) {
        Be64 k(a);
        MDB_val bv = val(&b, 8);
        del(txn, db_.edges, val(k.b, 8), &bv);
    }
}

}  // namespace agentsensus
