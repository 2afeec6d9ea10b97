// Each word's count of records for one lexical call. Weighing a statement,
// scoring records and checking mutual coverage look up the same few dozen
// words many times over; a node-based map spent most of that time hashing,
// dividing by a prime and allocating a node per word. Open addressing over a
// power-of-two array of slots, the words owned (short ones in place), looked
// up by view. One per call: not thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentsensus {

class WordTable {
public:
    // word's value, or null when it has none.
    const double* find(std::string_view word) const {
        const uint64_t h = hash_of(word);
        for (size_t i = h & mask(), probes = 0; probes < slots_.size(); i = (i + 1) & mask(), ++probes) {
            const Slot& s = slots_[i];
            if (!s.used) return nullptr;
            if (s.hash == h && s.word == word) return &s.value;
        }
        return nullptr;  // unreachable: at most half the slots are used
    }

    // Sets word's value unless it has one already (as std::unordered_map::emplace).
    void emplace(std::string_view word, double value) {
        // Invariant: at most half the slots are used, so a probe meets an empty one.
        if (2 * (size_ + 1) > slots_.size()) grow();
        const uint64_t h = hash_of(word);
        for (size_t i = h & mask();; i = (i + 1) & mask()) {
            Slot& s = slots_[i];
            if (!s.used) {
                s.word.assign(word.data(), word.size());
                s.value = value;
                s.hash = h;
                s.used = true;
                ++size_;
                return;
            }
            if (s.hash == h && s.word == word) return;
        }
    }

    size_t size() const { return size_; }

private:
    struct Slot {
        std::string word;
        double value = 0;
        uint64_t hash = 0;
        bool used = false;
    };

    // FNV-1a, then the high half folded in: the slot is taken from the low bits.
    static uint64_t hash_of(std::string_view w) {
        uint64_t h = 14695981039346656037ull;
        for (unsigned char c : w) h = (h ^ c) * 1099511628211ull;
        return h ^ (h >> 32);
    }
    size_t mask() const { return slots_.size() - 1; }

    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        size_ = 0;
        for (Slot& s : old)
            if (s.used) {
                for (size_t i = s.hash & mask();; i = (i + 1) & mask())
                    if (!slots_[i].used) {
                        slots_[i] = std::move(s);
                        ++size_;
                        break;
                    }
            }
    }

    std::vector<Slot> slots_ = std::vector<Slot>(64);  // a power of two
    size_t size_ = 0;
};

}  // namespace agentsensus
