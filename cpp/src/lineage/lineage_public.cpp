// Lineage (agentsensus/lineage.hpp): each public method forwards to
// LineageImpl, which holds the lineage tables' handles.
#include <memory>

#include "agentsensus/lineage.hpp"
#include "agentsensus/store.hpp"
#include "lineage/lineage.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

Lineage::Lineage(Store& store) : impl_(std::make_unique<LineageImpl>(store.impl_->env())) {}
Lineage::~Lineage() = default;

std::vector<uint64_t> Lineage::apply(const std::vector<LineageOp>& ops, bool commit) {
    return impl_->apply(ops, commit);
}
KeyInfo Lineage::info(std::string_view key) { return impl_->info(key); }
std::string Lineage::value(std::string_view key, uint64_t version) { return impl_->value(key, version); }
std::vector<std::string> Lineage::keys() { return impl_->keys(); }
std::vector<VersionRow> Lineage::versions(std::string_view key) { return impl_->versions(key); }
std::vector<LinkRow> Lineage::frontier(std::string_view key, const Scope* scope) { return impl_->frontier(key, scope); }
PreparedCheck Lineage::prepare(std::string_view key, const Scope* scope) { return impl_->prepare(key, scope); }
PreparedCheck Lineage::prepare_all() { return impl_->prepare_all(); }
std::string Lineage::answer(std::string_view owner, std::string_view query) { return impl_->answer(owner, query); }
CheckResult Lineage::finish(const PreparedCheck& p, const std::vector<const std::string*>& answers) {
    return impl_->finish(p, answers);
}
CheckResult Lineage::check_local(std::string_view key, const Scope* scope) { return impl_->check_local(key, scope); }
std::vector<std::string> Lineage::verify() { return impl_->verify(); }

}  // namespace agentsensus
