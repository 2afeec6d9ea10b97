// recall's planner: the owner's records scanned exactly or searched for in
// the whole graph (the plan below), and the hits as rows with their edges.
#include "store/store_impl.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unordered_set>

#include "agentsensus/limits.hpp"
#include "agentsensus/visible_text.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "index/parallel.hpp"
#include "store/store_util.hpp"

namespace agentsensus {

// The plan. A filtered HNSW search over a selective owner wanders the whole
// graph before it has k matches (35x slower than unfiltered at 0.1%
// selectivity when this plan was chosen), so: scan the owner's vectors
// exactly when it owns few records, else search the whole graph for about
// kOverfetch * k / selectivity nearest and keep the owner's, widening when
// that leaves fewer than k. When the (widened) search would cost more than a
// scan, scan. A search of w nearest keeps max(w, expansion_search) candidates
// and costs about kScanPerCandidate scanned vectors per candidate (measured
// on the int8 graph, dim 384: a scan about 0.07-0.09 us a vector, a search
// 34 (50k records), 118 (100k) and 124 (1M) scanned vectors per candidate;
// 200 when the graph held f32). A scan is also exact, where HNSW may miss.
//
// A crowded neighbourhood is searched once more, at least twice as wide and
// at least kCrowdedWiden times expansion_search: when the owner's k-th best
// lies within kCrowded (cosine) of the last candidate the walk ranked,
// records as good as the k-th sit at the walk's edge, where HNSW misses
// most. Measured on the clustered corpus: at 100k records the 5th best and
// the 64th candidate lie a median 0.42 apart (recall@5 1.000 at width 64),
// at 1M 0.029 (0.906 at width 64, 0.997 at 256, no better at 384), so it is
// done once. The wider width grows with the graph's depth past 2^16 records
// (crowded_width, crowd_gauge.hpp): a rebuilt 1M graph of the same corpus
// (the import adds in parallel, so no two builds are the same graph) gave
// 0.989 at 256 and 0.995 at 320 and 384 (the 100% owner; the 50% owner
// 0.990, 0.996, 0.996). kCrowded is 0.1 rather than less: the misses left at 10k records
// (a query far from every record, its 5th best at 0.16-0.20) lay
// 0.038-0.065 from the 64th; at 100k, 1% of the queries fall under 0.1.
// Where more than half the neighbourhoods are crowded (at 1M records of the
// clustered corpus), the first, narrower search is skipped: the search starts
// at the wider width, as a crowded query would reach it anyway (CrowdGauge).
namespace {
constexpr size_t kOverfetch = 3, kScanPerCandidate = 100;
constexpr float kCrowded = 0.1f;

using Bounded = VectorIndex::Bounded;

// Whether the k-th best score kth lies within kCrowded of the walk's edge
// (its lowest exact score): from the bounds when they settle it, else from
// the exact scores of the candidates that could be the lowest. The answer is
// the one exact scores of every candidate would give.
bool crowded_at(const VectorIndex& ix, const float* q, const std::vector<Bounded>& cand, float kth) {
    if (cand.empty()) return kth - 1.0f < kCrowded;
    float lo = INFINITY, hi = INFINITY;
    for (const Bounded& c : cand) lo = std::min(lo, c.lo), hi = std::min(hi, c.hi);
    // The edge lies in [lo, hi], and float subtraction is monotone.
    if (kth - hi >= kCrowded) return false;
    if (kth - lo < kCrowded) return true;
    float edge = hi;
    std::vector<uint64_t> ids;
    for (const Bounded& c : cand) {
        if (c.lo > hi) continue;  // above some candidate's upper bound: not the lowest
        if (c.lo == c.hi)
            edge = std::min(edge, c.lo);
        else
            ids.push_back(c.id);
    }
    std::sort(ids.begin(), ids.end());
    for (const Hit& h : ix.exact(q, ids.data(), ids.size())) edge = std::min(edge, h.score);
    return kth - edge < kCrowded;
}
}  // namespace

size_t StoreImpl::search_cost(size_t width) const { return std::max(width, expansion_search_) * kScanPerCandidate; }

// The probes are the stored vectors at evenly spaced keys, each searched
// unfiltered at the default width as a query near a record would be; crowded
// when the k-th best (kProbeK, the default k) lies within kCrowded of the
// last candidate for more than half of them. kProbes searches at the default
// width, at the first graph recall of an open that could start wider.
bool StoreImpl::neighbourhoods_crowded(MDB_txn* txn, size_t total) {
    if (auto v = crowd_.verdict(total)) return *v;
    constexpr size_t kProbeK = 5;
    Cursor c(txn, db_.vectors);
    MDB_val k, v;
    if (!c.op(k, v, MDB_FIRST) || k.mv_size != 8) return false;
    const uint64_t first = read_be64(k.mv_data);
    if (!c.op(k, v, MDB_LAST) || k.mv_size != 8) return false;
    const uint64_t last = read_be64(k.mv_data);
    std::vector<float> probe(dim_);
    size_t probed = 0, crowded = 0;
    for (size_t i = 0; i < CrowdGauge::kProbes; ++i) {
        Be64 at(first + (last - first) / CrowdGauge::kProbes * i);
        k = val(at.b, 8);
        if (!c.op(k, v, MDB_SET_RANGE)) break;
        if (v.mv_size != dim_ * sizeof(float)) throw Corrupt("a stored vector is damaged");
        std::memcpy(probe.data(), v.mv_data, v.mv_size);
        std::vector<Hit> hits = index_->search(probe.data(), expansion_search_);
        if (hits.size() <= kProbeK) continue;
        ++probed;
        crowded += hits[kProbeK - 1].score - hits.back().score < kCrowded;
    }
    const bool verdict = 2 * crowded > probed;
    crowd_.set(total, verdict);
    return verdict;
}

std::vector<Row> StoreImpl::recall(const std::string& owner, const float* query, size_t k, bool expand,
                                   const RecallFilter& filter, float threshold) {
    check_open();
    std::vector<float> q(dim_);
    prepare_vector(query, q.data());
    if (k == 0) return {};
    RecallPlan plan;
    {
        ReadTxn t(*env_);
        plan = plan_recall(t.get(), owner, k);
    }
    if (!plan.oid) return {};
    if (!plan.exact) ensure_allow_set(*plan.oid);
    std::shared_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    return recall_planned(t.get(), plan, q.data(), k, expand, filter, threshold);
}

// Scan or search, from the owner's record count and the store's (no oid:
// the owner owns nothing).
StoreImpl::RecallPlan StoreImpl::plan_recall(MDB_txn* txn, const std::string& owner, size_t k) {
    RecallPlan p;
    std::optional<uint32_t> oid = owner_id(txn, owner);
    if (!oid) return p;
    p.count = owned_count(txn, *oid);
    if (p.count == 0) return p;
    p.oid = oid;
    p.total = entries(txn, db_.records);
    p.wanted = p.total ? (kOverfetch * k * p.total + p.count - 1) / p.count : k;
    p.wanted = std::max(p.wanted, k);
    p.exact = p.count <= exact_cutoff_ || search_cost(p.wanted) >= p.count;
    return p;
}

// The plan run on txn's snapshot. Holds index_mu_ shared; the owner's
// allow-set exists unless the plan is exact.
std::vector<Row> StoreImpl::recall_planned(MDB_txn* txn, const RecallPlan& plan, const float* q, size_t k, bool expand,
                                           const RecallFilter& given, float threshold) {
    // Invariant: recall shows an owner only records current for it (or, with
    // as_of, held then), wherever the filter is applied (store_versions.cpp).
    const RecallFilter filter = versioned(txn, given);
    const uint32_t oid = *plan.oid;
    bool exact = plan.exact;
    std::vector<Hit> hits;
    // A filter that a scan of this snapshot evaluated already: its passing
    // records are scanned exactly when that costs less than a search.
    if (!exact && !filter.empty()) {
        auto passing = passing_ids(txn, oid, filter);
        exact = passing && search_cost(plan.wanted) >= passing->size();
    }
    if (!exact) exact = !search_owned(txn, oid, q, k, plan.count, plan.total, plan.wanted, hits, filter);
    std::shared_ptr<const std::vector<uint64_t>> scanned;
    if (exact) hits = scan_owned(txn, oid, q, k, filter, &scanned);
    hits.erase(std::remove_if(hits.begin(), hits.end(), [&](const Hit& h) { return h.score < threshold; }), hits.end());
    return recall_rows(txn, oid, hits, expand, filter, scanned.get());
}

// The owner's allow-set, current to the latest commit.
void StoreImpl::ensure_allow_set(uint32_t oid) {
    sync_index();
    {
        // Shared in the common case: an exclusive lock here would wait for
        // every search in flight, and so serialize reader threads.
        std::shared_lock<std::shared_mutex> shared(index_mu_);
        if (allow_.count(oid)) return;
    }
    std::unique_lock<std::shared_mutex> lock(index_mu_);
    if (allow_.count(oid)) return;
    ReadTxn t(*env_);
    catch_up_locked(t.get());
    std::vector<uint64_t> bits;
    for (uint64_t id : owned_ids(t.get(), oid)) set_bit(bits, id);
    allow_.emplace(oid, std::move(bits));
}

// Searches the whole graph, widening from `wanted`, and keeps the owner's
// best k; false when the graph does not reach enough of them (then scan).
// Under a filter, enough is kOverfetch * k that pass (the margin `wanted`
// gives an unfiltered search), and the next width follows the pass share
// seen among the owner's candidates, so that a selective filter goes to the
// scan after one search instead of several. Holds index_mu_ shared; the
// owner's allow-set exists.
bool StoreImpl::search_owned(MDB_txn* txn, uint32_t oid, const float* q, size_t k, size_t count, size_t total,
                             size_t wanted, std::vector<Hit>& hits, const RecallFilter& filter, bool trust_bits) {
    const std::vector<uint64_t>& bits = allow_.at(oid);
    const size_t want = std::min(k, count), enough = filter.empty() ? want : std::min(count, kOverfetch * k);
    const size_t asked = wanted;
    // The allow-set is this snapshot's ownership when the index has applied
    // exactly the snapshot's journal (index_mu_ is held, so neither moves):
    // then a candidate's bit needs no confirming lookup in LMDB, and only the
    // hits returned are confirmed below.
    const bool bits_exact = trust_bits && journal_end(txn) == applied_seq_;
    // The walk keeps expansion_search candidates however few are asked
    // for: take them all, more of them may be the owner's.
    wanted = std::max(wanted, expansion_search_);
    // The crowded rule's next width after a search of w.
    auto wider_than = [&, crowded = crowded_width(expansion_search_, total)](size_t w) {
        return std::max(2 * w, crowded);
    };
    // In a store whose neighbourhoods are crowded, start at that wider width
    // (CrowdGauge), as a crowded query would reach it anyway.
    bool widened = filter.empty() && wanted < total && search_cost(wider_than(wanted)) < count &&
                   neighbourhoods_crowded(txn, total);
    if (widened) wanted = wider_than(wanted);
    for (;;) {
        wanted = std::max(wanted, expansion_search_);
        // The walk's candidates, bounded: only the best few kept are read
        // from LMDB and scored exactly (VectorIndex::best), not all of them.
        const std::vector<Bounded> cand = index_->walk(q, wanted);
        // Keep the owner's; the allow-set may be ahead of this snapshot, so
        // ownership is then confirmed in it.
        size_t owned = 0;
        std::vector<Bounded> kept;
        for (const Bounded& c : cand) {
            if (!test_bit(bits, c.id) || (!bits_exact && !owns(txn, oid, c.id))) continue;
            ++owned;
            if (passes(txn, oid, c.id, filter)) kept.push_back(c);
        }
        if (kept.size() >= enough) {
            hits = index_->best(q, kept, want);
            // Every kept candidate had a vector at the walk; should one be
            // gone since (forgotten by another process, not yet applied to
            // the index), the exact scan answers instead.
            if (hits.size() < want) return false;
            if (widened || !crowded_at(*index_, q, cand, hits[want - 1].score)) break;
            // Crowded: once more, wider (or the exact scan when that costs less).
            widened = true;
            const size_t wider = wider_than(wanted);
            if (wanted >= total || search_cost(wider) >= count) return false;
            wanted = wider;
            continue;
        }
        size_t next = wanted * 4;
        if (!filter.empty() && owned > 0)
            next = std::max(next, hits.empty() ? wanted * enough * 4 : (wanted * enough) / hits.size() + 1);
        if (wanted >= total || search_cost(next) >= count) return false;
        wanted = next;
    }
    if (hits.size() > k) hits.resize(k);
    // Invariant: recall shows an owner only records it owns in the reader's
    // snapshot. Trusted bits are confirmed on the hits returned (k lookups,
    // not one per candidate); should one fail, the search runs again with
    // every candidate confirmed.
    if (bits_exact)
        for (const Hit& h : hits)
            if (!owns(txn, oid, h.id)) return search_owned(txn, oid, q, k, count, total, asked, hits, filter, false);
    return true;
}

// The exact best k of the owner's records. Holds index_mu_ shared.
std::vector<Hit> StoreImpl::scan_owned(MDB_txn* txn, uint32_t oid, const float* q, size_t k, const RecallFilter& filter,
                                       std::shared_ptr<const std::vector<uint64_t>>* scanned) {
    // Filtered before scoring: the k best scored are the k best that pass.
    std::shared_ptr<const std::vector<uint64_t>> passing = passing_ids(txn, oid, filter);
    if (!passing) {
        std::vector<uint64_t> ids = owned_ids(txn, oid);
        keep_passing(txn, oid, ids, filter);
        passing = std::make_shared<const std::vector<uint64_t>>(std::move(ids));
        remember_passing(txn, oid, filter, passing);
    }
    std::vector<uint64_t> absent;
    std::vector<Hit> hits = index_->scan(q, passing->data(), passing->size(), k, absent);
    // What the index does not hold (yet, or any more) is read from LMDB.
    std::vector<float> buf(dim_);
    for (uint64_t id : absent)
        if (vector_of(txn, id, buf.data())) hits.push_back(Hit{id, similarity(metric_, q, buf.data(), dim_)});
    size_t top = std::min(k, hits.size());
    std::partial_sort(hits.begin(), hits.begin() + top, hits.end(), better);
    hits.resize(top);
    if (scanned) *scanned = std::move(passing);
    return hits;
}

// The hits as rows, then (expand) the owner's records one edge away from
// them, each record once. `members`, when given, is what a scan of this
// snapshot read as the owner's records that pass the filter (ascending): a
// neighbour's membership is then a binary search in it, not an owner lookup
// and a filter check in LMDB.
std::vector<Row> StoreImpl::recall_rows(MDB_txn* txn, uint32_t oid, const std::vector<Hit>& hits, bool expand,
                                        const RecallFilter& filter, const std::vector<uint64_t>* members) {
    std::vector<Row> rows;
    std::unordered_set<uint64_t> seen;
    for (const Hit& h : hits) {
        Row r;
        if (!read_row(txn, h.id, r)) continue;
        read_record_meta(txn, h.id, oid, r);
        r.score = h.score;
        r.via = Via::hit;
        seen.insert(h.id);
        rows.push_back(std::move(r));
    }
    if (!expand) return rows;
    size_t nhits = rows.size();
    for (size_t i = 0; i < nhits; ++i) {
        uint64_t id = rows[i].id;
        for (uint64_t nb : neighbors_in(txn, id)) {
            if (seen.count(nb)) continue;
            if (members ? !std::binary_search(members->begin(), members->end(), nb)
                        : !owns(txn, oid, nb) || !passes(txn, oid, nb, filter))
                continue;
            Row r;
            if (!read_row(txn, nb, r)) continue;
            read_record_meta(txn, nb, oid, r);
            r.via = Via::edge;
            seen.insert(nb);
            rows.push_back(std::move(r));
        }
    }
    return rows;
}

}  // namespace agentsensus
