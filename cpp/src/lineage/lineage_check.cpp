// The check of a frontier: each owner's answer of its heads to a query,
// and the verdict on which recorded versions are stale.
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

// ------------------------------------------------------------------- heads

void LineageImpl::Ask::decode(std::string_view query) {
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

void LineageImpl::answer_in(MDB_txn* txn, std::vector<Ask>& asks) {
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

std::string LineageImpl::answer(std::string_view owner, std::string_view query) {
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
// what is stale to r. Links are LinkRow or LineageImpl::Link: key and version.
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

CheckResult LineageImpl::finish(const PreparedCheck& p, const std::vector<const std::string*>& answers) {
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

CheckResult LineageImpl::check_local(std::string_view key, const Scope* scope) {
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
