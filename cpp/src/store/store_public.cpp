// Store (agentsensus/store.hpp): each public method forwards to StoreImpl,
// which holds the LMDB environment and the index.
#include <memory>

#include "agentsensus/store.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

Store::Store(const std::string& dir, const StoreOptions& o) : impl_(std::make_unique<StoreImpl>(dir, o)) {}
Store::~Store() = default;

uint32_t Store::dim() const { return impl_->dim(); }
Metric Store::metric() const { return impl_->metric(); }
bool Store::readonly() const { return impl_->readonly(); }
PrepareResult Store::prepare(const float* vectors, size_t n, const unsigned char* digests, size_t k,
                             float min_similarity, std::string_view scope, size_t near_k, float near_floor) {
    return impl_->prepare(vectors, n, digests, k, min_similarity, scope, near_k, near_floor);
}
CommitResult Store::commit(const std::vector<CommitPlan>& plans, uint64_t prepared_seq, float min_similarity,
                           const BatchKey* batch, const std::vector<ItemWrite>* items) {
    return impl_->commit(plans, prepared_seq, min_similarity, batch, items);
}
std::vector<ItemRef> Store::write_items(const std::vector<ItemWrite>& writes) { return impl_->write_items(writes); }
std::optional<ItemRow> Store::item(std::string_view ns, std::string_view key) {
    return impl_->items().get(impl_->env(), ns, key);
}
std::vector<ItemRow> Store::items_under(std::string_view prefix) { return impl_->items().under(impl_->env(), prefix); }
std::vector<std::string> Store::item_namespaces() { return impl_->items().namespaces(impl_->env()); }
std::vector<std::pair<uint64_t, ItemRow>> Store::items_of(const std::string& owner,
                                                          const std::vector<uint64_t>& records) {
    return impl_->items().items_of(impl_->env(), owner, records);
}
std::vector<ItemRow> Store::items_page(const std::string& after_ns, const std::string& after_key, size_t limit) {
    return impl_->items().page(impl_->env(), after_ns, after_key, limit);
}
size_t Store::item_count() { return impl_->items().count(impl_->env()); }
std::optional<std::string> Store::setting(std::string_view name) { return impl_->settings().get(impl_->env(), name); }
void Store::set_setting(std::string_view name, std::string_view value) {
    impl_->settings().set(impl_->env(), name, value);
}
std::optional<BatchResult> Store::batch_result(const std::string& key) { return impl_->batch_result(key); }
std::vector<std::pair<std::string, BatchResult>> Store::batch_keys(const std::string& after, size_t limit) {
    return impl_->batch_keys(after, limit);
}
void Store::load_batch_keys(const std::vector<std::pair<std::string, BatchResult>>& rows) {
    impl_->load_batch_keys(rows);
}
void Store::prepare_vectors(const float* in, size_t n, float* out) const { impl_->prepare_vectors(in, n, out); }
void Store::similarities(const float* queries, size_t n, const float* kept, size_t m, float* out) const {
    impl_->similarities(queries, n, kept, m, out);
}
std::vector<Row> Store::recall(const std::string& owner, const float* query, size_t k, bool expand,
                               const RecallFilter& filter, float threshold) {
    return impl_->recall(owner, query, k, expand, filter, threshold);
}
Row Store::get(uint64_t id, const std::string& owner) { return impl_->get(id, owner); }
std::vector<MetaDump> Store::meta_dump(uint64_t after, size_t limit) { return impl_->meta_dump(after, limit); }
std::vector<MergeRow> Store::merges_of(uint64_t id) { return impl_->merges_of(id); }
void Store::load_meta(const std::vector<MetaDump>& rows) { impl_->load_meta(rows); }
bool Store::update(const std::string& owner, uint64_t id, std::string_view expected_text, std::string_view text,
                   const unsigned char* digest, const float* vector, uint32_t round, std::string_view metadata) {
    return impl_->update(owner, id, expected_text, text, digest, vector, round, metadata);
}
std::vector<uint64_t> Store::neighbors(uint64_t id) { return impl_->neighbors(id); }
std::vector<uint64_t> Store::chain(uint64_t id) { return impl_->chain(id); }
std::vector<VersionLinks> Store::versions_of(const std::vector<uint64_t>& ids) { return impl_->versions_of(ids); }
std::vector<uint64_t> Store::owned(const std::string& owner) { return impl_->owned(owner); }
std::string Store::scope_of(uint64_t id) { return impl_->scope_of(id); }
std::vector<std::string> Store::scopes_of(const std::vector<uint64_t>& ids) { return impl_->scopes_of(ids); }
std::vector<std::string> Store::scope_names() { return impl_->scope_names(); }
std::vector<std::vector<Row>> Store::recall_many(const std::vector<std::string>& owners, const float* queries, size_t k,
                                                 bool expand, const RecallFilter& filter, float threshold,
                                                 const std::optional<std::string>& scope, const AnswerFn& on_answer) {
    return impl_->recall_many(owners, queries, k, expand, filter, threshold, scope, on_answer);
}

std::vector<Row> Store::recall_scoped(const std::string& owner, const std::string& scope, const float* query, size_t k,
                                      bool expand, const RecallFilter& filter, float threshold) {
    return impl_->recall_scoped(owner, scope, query, k, expand, filter, threshold);
}
bool Store::forget(const std::string& owner, uint64_t id, const ForgetPlan& plan) {
    return impl_->forget(owner, id, plan);
}
std::pair<std::string, std::vector<SaidRow>> Store::said(uint64_t id) { return impl_->said(id); }
Stats Store::stats() { return impl_->stats(); }
Stats Store::stats(std::string_view scope) { return impl_->stats(scope); }
std::vector<MergeRow> Store::merges(uint64_t after_seq, size_t limit) { return impl_->merges(after_seq, limit); }
std::vector<Row> Store::records(uint64_t after, size_t limit) { return impl_->records(after, limit); }
std::vector<DumpRow> Store::dump(uint64_t after, size_t limit) { return impl_->dump(after, limit); }
Counters Store::counters() { return impl_->counters(); }
std::vector<std::string> Store::owner_names() { return impl_->owner_names(); }
void Store::restore(const LoadBatch& b) { impl_->restore(b); }
std::vector<std::string> Store::verify(const DigestFn& digest) { return impl_->verify(digest); }
void Store::repair(const std::vector<std::pair<uint64_t, std::string>>& digests) { impl_->repair(digests); }
void Store::check_alone() { impl_->check_alone(); }
bool Store::lexical_built() { return impl_->lexical_built(); }
void Store::build_lexical(const std::function<void(uint64_t, uint64_t)>& progress) { impl_->build_lexical(progress); }
LexicalAnswer Store::lexical(const std::vector<LexicalQuery>& queries, size_t k,
                             const std::vector<LexicalOverlay>& overlay, std::string_view scope) {
    return impl_->lexical(queries, k, overlay, scope);
}
LexicalWordCounts Store::lexical_word_counts(const std::vector<std::string>& texts,
                                             const std::vector<LexicalOverlay>& overlay, std::string_view scope) {
    return impl_->lexical_word_counts(texts, overlay, scope);
}
std::vector<Row> Store::recall_fused(const std::string& owner, const float* query, std::string_view text, size_t k,
                                     bool expand, std::vector<float>& lexical) {
    return impl_->recall_fused(owner, query, text, k, expand, lexical);
}
uint64_t Store::checkpoint() { return impl_->checkpoint(); }
void Store::close() { impl_->close(); }
bool Store::closed() const { return impl_->closed(); }

}  // namespace agentsensus
