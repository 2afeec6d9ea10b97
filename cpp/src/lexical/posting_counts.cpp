#include "lexical/posting_counts.hpp"

namespace agentsensus {

bool PostingCounts::advance(uint64_t at) {
    if (at == at_) return true;
    if (at < at_) return false;
    // Carried only across this handle's commits, each dropping what it
    // changed; the walk ends at the first commit that is not one of them
    // (at most kMaxCommits + 1 steps).
    bool carried = at_ != 0;
    for (uint64_t id = at_ + 1; carried && id <= at; ++id) {
        auto c = committed_.find(id);
        if (c == committed_.end() || c->second.all) {
            carried = false;
            break;
        }
        for (const auto& [k, delta] : c->second.moved) {
            size_t* count = counts_.find(k);
            if (!count) continue;
            // A count below what the commit removed was not the one it changed: drop it.
            if (delta < 0 && *count < static_cast<size_t>(-delta))
                counts_.erase(k);
            else
                *count = static_cast<size_t>(static_cast<long>(*count) + delta);
        }
        for (const std::string& k : c->second.keys) counts_.erase(k);
    }
    if (!carried) counts_.clear();
    at_ = at;
    committed_.erase(committed_.begin(), committed_.upper_bound(at));
    return true;
}

std::optional<size_t> PostingCounts::find(uint64_t at, const std::string& key) {
    std::lock_guard<std::mutex> g(mu_);
    if (!advance(at)) return std::nullopt;
    if (const size_t* count = counts_.find(key)) return *count;
    return std::nullopt;
}

void PostingCounts::remember(uint64_t at, const std::string& key, size_t count) {
    std::lock_guard<std::mutex> g(mu_);
    if (!advance(at)) return;
    if (counts_.size() >= kMaxCounts) counts_.clear();
    counts_.set(key, count);
}

PostingCounts::Change& PostingCounts::pending(uint64_t txn) {
    // A new transaction id starts new notes; the same id adds to its
    // attempt's (began() separates two attempts of one id: every write
    // transaction runs through Env::write, which calls it).
    if (writing_ != txn) {
        writing_ = txn;
        pending_ = Change();
    }
    if (!pending_.all && pending_.noted() >= kMaxKeys) pending_ = Change{{}, {}, true};
    return pending_;
}

void PostingCounts::began(uint64_t txn) {
    std::lock_guard<std::mutex> g(mu_);
    if (writing_ != txn) {
        // Notes of another id: a transaction that never committed, or one
        // committed unseen (a reader then finds its id missing and empties
        // the counts). Neither is this one's.
        writing_ = txn;
        pending_ = Change();
        return;
    }
    // An earlier attempt of this id did not commit: what it moved did not
    // happen, yet dropping those keys is always safe.
    for (auto& [k, delta] : pending_.moved) pending_.keys.push_back(k);
    pending_.moved.clear();
}

void PostingCounts::moved(uint64_t txn, const std::string& key, long delta) {
    std::lock_guard<std::mutex> g(mu_);
    Change& c = pending(txn);
    if (!c.all) c.moved[key] += delta;
}

void PostingCounts::changing_all(uint64_t txn) {
    std::lock_guard<std::mutex> g(mu_);
    writing_ = txn;
    pending_ = Change();
    pending_.all = true;
}

void PostingCounts::committed(uint64_t txn) {
    std::lock_guard<std::mutex> g(mu_);
    Change c;
    if (writing_ == txn) c = std::move(pending_);  // else it changed no postings
    writing_ = 0;
    pending_ = Change();
    // A reader already past it found it missing and emptied the counts.
    if (txn <= at_) return;
    if (committed_.size() >= kMaxCommits) {
        committed_.clear();
        counts_.clear();
        at_ = 0;
    }
    committed_[txn] = std::move(c);
}

}  // namespace agentsensus
