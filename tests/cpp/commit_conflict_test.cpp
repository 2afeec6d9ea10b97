// Store::commit's conflicts on a real store in a temporary directory, as
// tests/test_commit_conflicts.py checks them through Python: a plan whose
// decision another writer made stale between prepare and commit (an
// identical or a similar record committed meanwhile; a merge whose survivor
// was deleted or changed meanwhile) makes the commit report that conflict
// and write nothing, for that plan or any other of the commit.
#include <cmath>
#include <string>
#include <vector>

#include "agentsensus/errors.hpp"
#include "agentsensus/limits.hpp"
#include "agentsensus/store.hpp"
#include "check.hpp"
#include "temp_dir.hpp"

using namespace agentsensus;

namespace {

constexpr uint32_t kDim = 8;
constexpr float kMinSimilarity = 0.75f;
const std::string kSeedText = "the cat sat on the mat";

// A unit vector along axis a, tilted by `tilt` toward axis b.
std::vector<float> axis(size_t a, size_t b = 0, float tilt = 0.f) {
    std::vector<float> v(kDim, 0.f);
    v[a] = 1.f;
    v[b] += tilt;
    float n = 0.f;
    for (float x : v) n += x * x;
    for (float& x : v) x /= std::sqrt(n);
    return v;
}

// A stand-in for the caller's normalized-text digest: 16 bytes per text.
std::string digest_of(const std::string& text) {
    std::string d(kDigestBytes, '\0');
    for (size_t i = 0; i < text.size(); ++i) d[i % kDigestBytes] = char(d[i % kDigestBytes] * 31 + text[i] + i);
    return d;
}

// One statement: a new record (target 0) or a merge into target, whose text
// the policy saw as expected and keeps as kept.
CommitPlan plan(const std::string& owner, const std::string& text, const std::vector<float>& v, int64_t target = 0,
                const std::string& expected = "", const std::string& kept = "") {
    CommitPlan p;
    p.owner = owner;
    p.texts = {text};
    p.digests = digest_of(text);
    p.vectors = v;
    p.targets = {target};
    p.expected = {expected};
    p.kept = {kept};
    return p;
}

struct Fixture {
    TempDir dir;
    Store store{dir.path(), options()};

    static StoreOptions options() {
        StoreOptions o;
        o.dim = kDim;
        o.sync = false;
        return o;
    }
    uint64_t seq_for(const std::string& text, const std::vector<float>& v) {
        std::string d = digest_of(text);
        return store.prepare(v.data(), 1, reinterpret_cast<const unsigned char*>(d.data()), 8, kMinSimilarity).seq;
    }
    // A commit on a fresh snapshot, which must succeed: the record's id.
    uint64_t commit_now(const CommitPlan& p) {
        CommitResult r = store.commit(std::vector<CommitPlan>{p}, seq_for(p.texts[0], p.vectors), kMinSimilarity);
        CHECK(!r.conflict);
        return r.conflict ? 0 : r.ids.at(0).at(0);
    }
    // What a commit that wrote nothing leaves as it was.
    std::string state() {
        Stats s = store.stats();
        std::string out = std::to_string(s.records) + "/" + std::to_string(s.deposits) + "/" +
                          std::to_string(s.merges) + "/" + std::to_string(s.owners) + ":";
        for (const Row& r : store.records(0, 100)) out += std::to_string(r.id) + "=" + r.text + ";";
        return out;
    }
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(identical_statement_committed_meanwhile) {
    Fixture f;
    const std::string text = "a delivery van parked at the corner";
    const std::vector<float> v = axis(0, 1, 0.2f);
    uint64_t seq = f.seq_for(text, v);
    f.commit_now(plan("rival", text, axis(5)));  // same text, another meaning: the digest decides
    std::string before = f.state();
    CommitResult r = f.store.commit(std::vector<CommitPlan>{plan("outer", text, v)}, seq, kMinSimilarity);
    CHECK(r.conflict);
    CHECK(contains(r.why, "an identical statement committed meanwhile"));
    CHECK_EQ(f.state(), before);
    CHECK(f.store.owned("outer").empty());
}

TEST(similar_record_committed_meanwhile) {
    Fixture f;
    const std::string text = "a delivery van parked at the corner";
    const std::vector<float> v = axis(0, 1, 0.2f);
    CommitPlan mine = plan("outer", text, v);
    uint64_t seq = f.seq_for(text, v);
    f.commit_now(plan("rival", "the van stood on the corner", axis(0, 2, 0.2f)));
    std::string before = f.state();
    CommitResult r = f.store.commit(std::vector<CommitPlan>{mine}, seq, kMinSimilarity);
    CHECK(r.conflict);
    CHECK(contains(r.why, "a similar record committed meanwhile"));
    CHECK_EQ(f.state(), before);
    // The same plan on a fresh snapshot commits: the conflict was the rival's.
    CommitResult again = f.store.commit(std::vector<CommitPlan>{mine}, f.seq_for(text, v), kMinSimilarity);
    CHECK(!again.conflict);
}

TEST(merge_into_a_record_deleted_meanwhile) {
    Fixture f;
    uint64_t a = f.commit_now(plan("a", kSeedText, axis(0)));
    const std::string text = "a cat sat on a mat";
    uint64_t seq = f.seq_for(text, axis(0, 1, 0.1f));
    CHECK(f.store.forget("a", a, ForgetPlan{}));  // its last owner: the record goes
    std::string before = f.state();
    CommitPlan merge = plan("outer", text, axis(0, 1, 0.1f), static_cast<int64_t>(a), kSeedText, kSeedText);
    CommitResult r = f.store.commit(std::vector<CommitPlan>{merge}, seq, kMinSimilarity);
    CHECK(r.conflict);
    CHECK(contains(r.why, "record " + std::to_string(a) + " was deleted meanwhile"));
    CHECK_EQ(f.state(), before);
}

TEST(merge_into_a_record_changed_meanwhile) {
    Fixture f;
    uint64_t a = f.commit_now(plan("a", kSeedText, axis(0)));
    const std::string text = "a cat sat on a mat";
    uint64_t seq = f.seq_for(text, axis(0, 1, 0.1f));
    // A rival merges into the record first and keeps its own wording.
    f.commit_now(plan("rival", "cat on mat", axis(0, 2, 0.1f), static_cast<int64_t>(a), kSeedText, "cat on mat"));
    std::string before = f.state();
    CommitPlan merge = plan("outer", text, axis(0, 1, 0.1f), static_cast<int64_t>(a), kSeedText, kSeedText);
    CommitResult r = f.store.commit(std::vector<CommitPlan>{merge}, seq, kMinSimilarity);
    CHECK(r.conflict);
    CHECK(contains(r.why, "record " + std::to_string(a) + " changed meanwhile"));
    CHECK_EQ(f.state(), before);
    CHECK_EQ(f.store.get(a).text, std::string("cat on mat"));
}

TEST(one_stale_plan_leaves_the_whole_commit_unwritten) {
    Fixture f;
    uint64_t a = f.commit_now(plan("a", kSeedText, axis(0)));
    uint64_t seq = f.seq_for("a fresh fact", axis(3));
    f.store.forget("a", a, ForgetPlan{});
    std::string before = f.state();
    // The first plan alone would commit; the second merges into the record gone.
    std::vector<CommitPlan> plans{
        plan("outer", "a fresh fact", axis(3)),
        plan("outer", "a cat sat on a mat", axis(0), static_cast<int64_t>(a), kSeedText, kSeedText)};
    CommitResult r = f.store.commit(plans, seq, kMinSimilarity);
    CHECK(r.conflict);
    CHECK(contains(r.why, "was deleted meanwhile"));
    CHECK_EQ(f.state(), before);
    CHECK(f.store.owned("outer").empty());
}

TEST(batch_key_committed_meanwhile) {
    Fixture f;
    uint64_t seq = f.seq_for("a fact", axis(1));
    BatchKey key{"batch-1", std::string(kBatchDigestBytes, 'x')};
    CommitResult first =
        f.store.commit(std::vector<CommitPlan>{plan("outer", "a fact", axis(1))}, seq, kMinSimilarity, &key);
    CHECK(!first.conflict);
    std::string before = f.state();
    CommitResult second =
        f.store.commit(std::vector<CommitPlan>{plan("outer", "another fact", axis(2))}, seq, kMinSimilarity, &key);
    CHECK(second.conflict);
    CHECK(contains(second.why, "the batch key was committed meanwhile"));
    CHECK_EQ(f.state(), before);
}

TEST(no_conflict_when_nothing_moved) {
    Fixture f;
    uint64_t a = f.commit_now(plan("a", kSeedText, axis(0)));
    uint64_t seq = f.seq_for("a cat sat on a mat", axis(0, 1, 0.1f));
    f.commit_now(plan("rival", "an unrelated fact", axis(6)));  // far from every plan: no conflict
    CommitPlan merge =
        plan("outer", "a cat sat on a mat", axis(0, 1, 0.1f), static_cast<int64_t>(a), kSeedText, kSeedText);
    CommitResult r = f.store.commit(std::vector<CommitPlan>{merge}, seq, kMinSimilarity);
    CHECK(!r.conflict);
    CHECK_EQ(r.ids.at(0).at(0), a);
    CHECK_EQ(f.store.get(a).owners.size(), size_t(2));
}

TEST(a_plan_whose_fields_disagree_is_refused) {
    Fixture f;
    CommitPlan bad = plan("outer", "a fact", axis(1));
    bad.targets.push_back(0);
    std::string before = f.state();
    CHECK_THROWS(InvalidArgument, f.store.commit(std::vector<CommitPlan>{bad}, 0, kMinSimilarity));
    bad = plan("outer", "a fact", axis(1));
    bad.vectors.pop_back();
    CHECK_THROWS(InvalidArgument, f.store.commit(std::vector<CommitPlan>{bad}, 0, kMinSimilarity));
    CHECK_EQ(f.state(), before);
}

CHECK_MAIN
