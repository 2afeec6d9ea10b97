// A thin RAII layer over one LMDB environment: transactions, map growth, and
// the few put/get/del shapes the engine uses.
#pragma once
#include <lmdb.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "agentsensus/errors.hpp"
#include "lmdb/open_registry.hpp"

namespace agentsensus {

// Thrown inside a write transaction when the map is full; Env::write grows
// the map and replays the transaction.
struct MapFull {};
// Thrown by a ReadTxn told not to adopt a map another process grew: the
// caller holds other read transactions, which adopting would wait for.
struct MapResized {};

[[noreturn]] void throw_lmdb(int rc, const char* what);

inline MDB_val val(const void* p, size_t n) {
    MDB_val v;
    v.mv_data = const_cast<void*>(p);
    v.mv_size = n;
    return v;
}
inline MDB_val val(std::string_view s) { return val(s.data(), s.size()); }
inline std::string_view view(const MDB_val& v) {
    return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

class Env;

// A read-only snapshot. Holds the environment's resize lock shared, so the
// map is never resized under it. A map another process grew is adopted
// first, unless adopt is false (then MapResized is thrown). Its LMDB handle
// comes from the environment's idle handles when there is one (Env::reader).
class ReadTxn {
public:
    explicit ReadTxn(Env& env, bool adopt = true);
    ~ReadTxn();
    ReadTxn(const ReadTxn&) = delete;
    ReadTxn& operator=(const ReadTxn&) = delete;
    MDB_txn* get() const { return txn_; }

private:
    std::shared_lock<std::shared_mutex> lock_;
    Env* env_ = nullptr;
    MDB_txn* txn_ = nullptr;
};

// A cursor that closes itself.
class Cursor {
public:
    Cursor(MDB_txn* txn, MDB_dbi dbi);
    ~Cursor();
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;
    MDB_cursor* get() const { return cur_; }
    // mdb_cursor_get; false on MDB_NOTFOUND, throws on anything else.
    bool op(MDB_val& k, MDB_val& v, MDB_cursor_op o);

private:
    MDB_cursor* cur_ = nullptr;
};

class Env {
public:
    struct Options {
        bool readonly = false;
        bool create = true;
        bool sync = true;  // fsync on every commit (the safe default)
        size_t initial_map = size_t(256) << 20;
        unsigned max_dbs = 64;  // the store's and the lineage's tables (schema.hpp), with room; as compact opens it
        unsigned max_readers = 1022;
    };
    Env(const std::string& dir, const Options& o);
    ~Env();
    Env(const Env&) = delete;
    Env& operator=(const Env&) = delete;

    MDB_env* raw() const { return env_; }
    bool readonly() const { return readonly_; }

    // Opens (creating unless read-only) a named database. Call before any
    // other transaction runs.
    MDB_dbi open_db(const char* name, unsigned flags);

    // Runs fn(txn) in a write transaction and commits it. When the map fills,
    // the transaction is aborted, the map grown, and fn run again from the
    // start: fn must not keep side effects outside the transaction.
    void write(const std::function<void(MDB_txn*)>& fn);
    // fn(id) after each write transaction this handle commits, with its
    // LMDB txn id, on the committing thread (set once, at open).
    void on_commit(std::function<void(uint64_t)> fn) { on_commit_ = std::move(fn); }
    // fn(id) as each write transaction attempt begins, before its work (an
    // attempt retried after the map grew begins again with the same id).
    void on_begin(std::function<void(uint64_t)> fn) { on_begin_ = std::move(fn); }

    // Picks up a map size another process grew to.
    void adopt_resize();
    size_t map_size() const;
    // Clears reader slots of dead processes; returns how many.
    int reader_check();

    std::shared_mutex& resize_mutex() { return resize_mu_; }

    // Idle read handles: a new read transaction allocates and clears a
    // handle sized for every table (max_dbs), which was a sixth of a small
    // owner's recall; a handle reset (mdb_txn_reset) and renewed skips that.
    // reader() gives an idle one, or nullptr; idle(txn) takes back a reset
    // handle, keeping at most kIdleReaders (each keeps its reader slot;
    // MDB_NOTLS lets it move between threads) and aborting the rest.
    MDB_txn* reader();
    void idle(MDB_txn* txn);

    // Exclusive use of the store across processes, for repair: every open
    // holds a shared flock on data.mdb's descriptor, and this takes it
    // exclusive (without waiting) until the guard ends; Error names the
    // refusal when another process has the store open.
    class Exclusive {
    public:
        explicit Exclusive(Env& env);
        ~Exclusive();
        Exclusive(const Exclusive&) = delete;
        Exclusive& operator=(const Exclusive&) = delete;

    private:
        Env& env_;
    };

private:
    void grow();
    // Throws StoreMoved when data.mdb at its path is no longer the file this
    // environment has open (deleted, or another file renamed over it).
    void check_same_file() const;

    std::string dir_;
    int fd_ = -1;  // LMDB's descriptor of data.mdb

    OpenClaim claim_;  // one Env per store directory per process (open_registry.hpp)
    MDB_env* env_ = nullptr;
    bool readonly_ = false;
    std::shared_mutex resize_mu_;
    std::function<void(uint64_t)> on_commit_, on_begin_;
    static constexpr size_t kIdleReaders = 16;
    std::mutex idle_mu_;
    std::vector<MDB_txn*> idle_;  // reset read handles; aborted before the environment closes
};

// Small helpers. get/del return false on MDB_NOTFOUND; put returns false on
// MDB_KEYEXIST (with NOOVERWRITE/NODUPDATA). MDB_MAP_FULL throws MapFull.
bool get(MDB_txn* txn, MDB_dbi dbi, MDB_val key, MDB_val& out);
bool put(MDB_txn* txn, MDB_dbi dbi, MDB_val key, MDB_val v, unsigned flags = 0);
bool del(MDB_txn* txn, MDB_dbi dbi, MDB_val key, const MDB_val* v = nullptr);
size_t entries(MDB_txn* txn, MDB_dbi dbi);

}  // namespace agentsensus
