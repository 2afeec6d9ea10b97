// recall_many: many owners' recalls on one snapshot, across threads. Each
// answer is what recall (or recall_scoped) gives for its query on that
// snapshot: the same plan, search and scan (store_recall.cpp), run by a
// worker on a read transaction of its own.
#include <lmdb.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_set>

#include "index/parallel.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

namespace {
// Each worker holds a reader slot for the batch; a few cores' worth is all
// a batch gains from.
constexpr size_t kMaxWorkers = 8;
// Commits between two workers' transaction starts make them start again;
// past this many tries the batch runs on one thread and one transaction.
constexpr int kSnapshotTries = 8;
}  // namespace

// Invariant: every transaction returned reads the same snapshot (equal
// txn ids), so all answers of a batch describe one state of the store. An
// LMDB transaction is used by one thread at a time (MDB_NOTLS lets it move
// between threads, not be shared), hence one per worker, and LMDB cannot
// start a transaction at a given snapshot: so they are started one after
// another and started again when a commit fell between them. The caller's
// thread holds them all at once, each with the resize lock shared: a
// shared_mutex (glibc's rwlock, reader-preferring) grants a held shared
// lock again while a resize in this process waits; a map another process
// grew is adopted only with none of them held (MapResized).
std::vector<std::unique_ptr<ReadTxn>> StoreImpl::same_snapshot(size_t workers) {
    std::vector<std::unique_ptr<ReadTxn>> txns;
    for (int tries = 0; tries < kSnapshotTries; ++tries) {
        txns.clear();
        txns.push_back(std::make_unique<ReadTxn>(*env_));
        const size_t seen = mdb_txn_id(txns[0]->get());
        try {
            while (txns.size() < workers) {
                auto t = std::make_unique<ReadTxn>(*env_, false);
                if (mdb_txn_id(t->get()) != seen) break;
                txns.push_back(std::move(t));
            }
        } catch (const MapResized&) {
            txns.clear();  // the next try's first transaction adopts it
            continue;
        }
        if (txns.size() == workers) return txns;
    }
    txns.resize(1);
    return txns;
}

std::vector<std::vector<Row>> StoreImpl::recall_many(const std::vector<std::string>& owners, const float* queries,
                                                     size_t k, bool expand, const RecallFilter& filter, float threshold,
                                                     const std::optional<std::string>& scope,
                                                     const std::function<void(size_t, std::vector<Row>&&)>& on_answer) {
    check_open();
    const size_t n = owners.size();
    // Every query is checked before anything is read.
    std::vector<float> q(n * dim_);
    for (size_t i = 0; i < n; ++i) prepare_vector(queries + i * dim_, q.data() + i * dim_);
    std::vector<std::vector<Row>> out(n);
    if (k == 0 || n == 0) {
        if (on_answer)
            for (size_t i = 0; i < n; ++i) on_answer(i, std::vector<Row>());
        return out;
    }

    // As recall does before its search: the plans on a snapshot, then the
    // allow-sets the searches need (recall_scoped: the index caught up).
    std::vector<RecallPlan> plans;
    if (scope) {
        sync_index();
    } else {
        plans.resize(n);
        {
            ReadTxn t(*env_);
            for (size_t i = 0; i < n; ++i) plans[i] = plan_recall(t.get(), owners[i], k);
        }
        std::unordered_set<uint32_t> searched;
        for (const RecallPlan& p : plans)
            if (p.oid && !p.exact && searched.insert(*p.oid).second) ensure_allow_set(*p.oid);
    }

    // The index does not move while the batch runs, as for one recall.
    std::shared_lock<std::shared_mutex> lock(index_mu_);
    std::vector<std::unique_ptr<ReadTxn>> txns = same_snapshot(std::min(kMaxWorkers, parallel_workers(n)));
    parallel_on(n, txns.size(), [&](size_t w, size_t i) {
        MDB_txn* txn = txns[w]->get();
        const float* qi = q.data() + i * dim_;
        std::vector<Row> rows;
        if (scope)
            rows = recall_scoped_in(txn, owners[i], *scope, qi, k, expand, filter, threshold);
        else if (plans[i].oid)
            rows = recall_planned(txn, plans[i], qi, k, expand, filter, threshold);
        if (on_answer)
            on_answer(i, std::move(rows));
        else
            out[i] = std::move(rows);
    });
    return out;
}

}  // namespace agentsensus
