// Planfence lineage: which exact versions of its inputs each derived item was
// made from, kept in the store's LMDB environment beside the records.
//
// Every key has one owner and a head version; every version keeps a digest
// of its value; a derived version keeps its inputs as (key, version, digest)
// links. The frontier of a key is every link reachable from its head through
// derived inputs; a check groups it by owner, asks each owner once for its
// heads (the encoding of heads_codec.hpp) and reports what moved. The engine
// never calls Python: a check against remote owners is split into prepare
// (queries out) and finish (answers in), with the transport in between.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace agentsensus {

class Store;
class LineageImpl;

constexpr size_t kValueDigestBytes = 16;
// UTF-8 bytes of a lineage key: it is an LMDB key, and LMDB's limit is 511.
constexpr size_t kMaxKeyBytes = 511;
constexpr size_t kMaxValueBytes = size_t(64) << 20;  // one version's value
constexpr size_t kMaxInputs = 65535;                 // links of one derived version

using ValueDigest = std::array<unsigned char, kValueDigestBytes>;
using Scope = std::unordered_set<std::string>;

// One recorded link: the exact version of an input a derived version used.
struct LinkRow {
    std::string key;
    std::string owner;
    uint64_t version = 0;
    ValueDigest digest{};
    bool derived = false;  // that input version has inputs of its own
};

// A write. publish: the next version of a base input. derive: the next
// version of a derived item, from the given input versions. observe: a copy
// of a version another store owns (version and digest as its owner said),
// so that local derivations may link to it.
struct LineageOp {
    enum Kind : uint8_t { publish = 0, derive = 1, observe = 2 };
    Kind kind = publish;
    std::string key;
    std::string owner;
    ValueDigest digest{};
    std::string value;
    uint64_t version = 0;                                  // observe and restore only
    std::vector<std::pair<std::string, uint64_t>> inputs;  // derive only
    // Import: write exactly this version with this kind (the key's head
    // becomes the highest version written). The version must be new.
    bool restore = false;
};

// One recorded version of a key, as an export writes it.
struct VersionRow {
    uint64_t version = 0;
    LineageOp::Kind kind = LineageOp::publish;
    ValueDigest digest{};
    std::string value;
    std::vector<std::pair<std::string, uint64_t>> inputs;  // derive: sorted by key
};

struct KeyInfo {
    std::string owner;
    uint64_t head = 0;
};

// One owner's part of a check: its links and the encoded query for them.
struct OwnerGroup {
    std::string owner;
    std::vector<LinkRow> links;  // sorted by key, version; distinct
    std::string query;
};

struct PreparedCheck {
    std::vector<OwnerGroup> groups;  // sorted by owner
};

enum class StaleWhy : uint8_t { moved = 0, unknown = 1, no_answer = 2, malformed = 3 };

struct StaleRow {
    std::string key;
    std::string owner;
    uint64_t recorded = 0;
    uint64_t head = 0;  // 0 when the owner gave none
    StaleWhy why = StaleWhy::moved;
};

struct CheckResult {
    bool current = true;
    std::vector<StaleRow> stale;
    uint32_t owners_asked = 0;
    uint64_t bytes = 0;  // encoded queries + answers
};

class Lineage {
public:
    // Opens (or, in a writable store, creates) the lineage tables in the
    // store's environment. Call right after the store opens, before other
    // threads use it. In a read-only store without lineage tables the
    // lineage is empty. The store must outlive it.
    explicit Lineage(Store& store);
    ~Lineage();
    Lineage(const Lineage&) = delete;
    Lineage& operator=(const Lineage&) = delete;

    // Applies ops in order in one write transaction and returns each op's
    // version. commit=false validates and numbers them, then rolls back.
    // Any failure leaves the lineage unchanged.
    std::vector<uint64_t> apply(const std::vector<LineageOp>& ops, bool commit);

    KeyInfo info(std::string_view key);                         // NotFound when unknown
    std::string value(std::string_view key, uint64_t version);  // version 0: the head
    std::vector<std::string> keys();                            // every key, sorted
    std::vector<VersionRow> versions(std::string_view key);     // every recorded version, ascending

    // Every link reachable from key's head, cut to scope (nullptr: all),
    // sorted by owner, key, version.
    std::vector<LinkRow> frontier(std::string_view key, const Scope* scope);

    PreparedCheck prepare(std::string_view key, const Scope* scope);
    // Every key at its head, as all-key validation would ask.
    PreparedCheck prepare_all();
    // The owner's side: answers a query from this store's heads. Keys this
    // store does not know, or that another owner owns, are answered unknown.
    // Throws InvalidArgument on a malformed query.
    std::string answer(std::string_view owner, std::string_view query);
    // answers[i] is group i's answer, or nullptr if the owner gave none.
    CheckResult finish(const PreparedCheck& p, const std::vector<const std::string*>& answers);
    // prepare + answer from this store + finish on one snapshot.
    CheckResult check_local(std::string_view key, const Scope* scope);

    // Every broken lineage invariant in plain words (heads against their
    // versions, owners, links); empty when sound.
    std::vector<std::string> verify();

private:
    std::unique_ptr<LineageImpl> impl_;
};

}  // namespace agentsensus
