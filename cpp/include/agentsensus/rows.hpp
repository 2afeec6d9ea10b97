// The rows the engine's API takes and gives.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace agentsensus {

// One deposit's plan as a caller builds it for Store::commit, owning its
// data (Store::commit checks it and views it as a DepositPlan). Per
// statement i: texts[i], its normalized-text digest (digests[16i, 16i+16)),
// its vector (vectors[dim*i, dim*i+dim), as given), its target (0: a new
// record; > 0: merge into that record; < 0: into the (-target)-th new
// record of this commit, 1-based), and for a merge the survivor's text the
// caller's policy saw (expected: a mismatch is a conflict) and its text
// after (kept). metadata: empty, or per statement a JSON object for
// (record, owner) or "" (leave it as it is).
struct CommitPlan {
    std::string owner;
    uint32_t round = 0;
    std::string scope;  // "" the default scope; its records merge only with records of this scope
    std::vector<std::string> texts;
    std::string digests;
    std::vector<float> vectors;
    std::vector<int64_t> targets;
    std::vector<std::string> expected, kept;
    std::vector<std::string> metadata;
};

}  // namespace agentsensus
