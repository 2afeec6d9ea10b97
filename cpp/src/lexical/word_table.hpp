// A map from words (any bytes) to values, for the lexical reads' hot
// lookups: one call's record counts per word (weighing a statement, scoring
// records and checking mutual coverage look up the same few dozen words many
// times over) and the word counts a store handle remembers between calls.
// A node-based std::unordered_map spent most of that time hashing, dividing
// by a prime and allocating a node per word. Open addressing over a
// power-of-two array of slots, linear probing, the words owned (short ones
// in place), looked up by view. Not thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentsensus {

template <class V> class WordMap {
public:
    explicit WordMap(size_t slots = 128) : initial_(round_up(slots)), slots_(initial_) {}

    // word's value, or null when it has none.
    const V* find(std::string_view word) const {
        const Slot* s = locate(word);
        return s && s->known ? &s->value : nullptr;
    }
    V* find(std::string_view word) {
        Slot* s = const_cast<Slot*>(locate(word));
        return s && s->known ? &s->value : nullptr;
    }

    // Sets word's value unless it has one already (as std::unordered_map::emplace).
    void emplace(std::string_view word, V value) { put(word, std::move(value), false); }
    // Sets word's value, whether it had one or not.
    void set(std::string_view word, V value) { put(word, std::move(value), true); }
    // word has no value any more (its slot stays, for the probes past it).
    void erase(std::string_view word) {
        Slot* s = const_cast<Slot*>(locate(word));
        if (s && s->known) {
            s->known = false;
            --size_;
        }
    }
    // Back to the first size: a clear costs what the words filled, once.
    void clear() {
        if (used_ == 0) return;
        std::vector<Slot>(initial_).swap(slots_);
        size_ = used_ = 0;
    }
    // Words with a value.
    size_t size() const { return size_; }

private:
    struct Slot {
        V value{};
        std::string word;
        uint64_t hash = 0;
        bool used = false;   // holds a word (whose value may have been erased)
        bool known = false;  // and a value for it
    };

    static size_t round_up(size_t n) {
        size_t p = 16;
        while (p < n) p *= 2;
        return p;
    }
    // FNV-1a, then the high half folded in: the slot is taken from the low bits.
    static uint64_t hash_of(std::string_view w) {
        uint64_t h = 14695981039346656037ull;
        for (unsigned char c : w) h = (h ^ c) * 1099511628211ull;
        return h ^ (h >> 32);
    }
    size_t mask() const { return slots_.size() - 1; }
    // word's slot, or null when it has none.
    const Slot* locate(std::string_view word) const {
        const uint64_t h = hash_of(word);
        for (size_t i = h & mask(), probes = 0; probes < slots_.size(); i = (i + 1) & mask(), ++probes) {
            const Slot& s = slots_[i];
            if (!s.used) return nullptr;
            if (s.hash == h && s.word == word) return &s;
        }
        return nullptr;  // unreachable: at most half the slots are used
    }

    void put(std::string_view word, V value, bool overwrite) {
        // Invariant: at most half the slots are used, so every probe meets an empty one.
        if (2 * (used_ + 1) > slots_.size()) grow();
        const uint64_t h = hash_of(word);
        for (size_t i = h & mask();; i = (i + 1) & mask()) {
            Slot& s = slots_[i];
            if (!s.used) {
                s.word.assign(word.data(), word.size());
                s.hash = h;
                s.used = true;
                ++used_;
            } else if (s.hash != h || s.word != word) {
                continue;
            } else if (s.known && !overwrite) {
                return;
            }
            if (!s.known) ++size_;
            s.value = std::move(value);
            s.known = true;
            return;
        }
    }

    // The words with values into a new array, twice as large unless erased
    // words took most of the room.
    void grow() {
        std::vector<Slot> old(4 * (size_ + 1) > slots_.size() ? slots_.size() * 2 : slots_.size());
        old.swap(slots_);
        size_ = used_ = 0;
        for (Slot& s : old)
            if (s.known)
                for (size_t i = s.hash & mask();; i = (i + 1) & mask())
                    if (!slots_[i].used) {
                        slots_[i] = std::move(s);
                        ++size_;
                        ++used_;
                        break;
                    }
    }

    size_t initial_;
    std::vector<Slot> slots_;  // a power of two
    size_t size_ = 0, used_ = 0;
};

// One lexical call's record count of each word.
using WordTable = WordMap<double>;

}  // namespace agentsensus
