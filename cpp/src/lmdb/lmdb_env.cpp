#include "lmdb/lmdb_env.hpp"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "agentsensus/page_check.hpp"
#include "lmdb/data_file.hpp"

namespace agentsensus {

LmdbError::LmdbError(int rc, const std::string& what) : Error(what), code(rc) {}

namespace {

// True when the file system of the environment has less free space than
// one commit of a few pages could need.
bool device_full(MDB_env* env) {
    const char* path = nullptr;
    struct statvfs st;
    if (mdb_env_get_path(env, &path) != 0 || !path || statvfs(path, &st) != 0) return false;
    return static_cast<unsigned long long>(st.f_bavail) * st.f_frsize < (1ull << 20);
}

}  // namespace

void throw_lmdb(int rc, const char* what) {
    if (rc == MDB_MAP_FULL) throw MapFull{};
    if (rc == ENOSPC) throw StoreFull(std::string(what) + ": no space left on the device; nothing was written");
    std::string msg = std::string(what) + ": " + mdb_strerror(rc);
    if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) throw DamagedPage(msg);
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_BAD_VALSIZE || rc == MDB_INCOMPATIBLE)
        throw Corrupt(msg);
    throw LmdbError(rc, msg);
}

ReadTxn::ReadTxn(Env& env, bool adopt) : env_(&env) {
    bool retried = false;
    for (;;) {
        lock_ = std::shared_lock<std::shared_mutex>(env.resize_mutex());
        if (MDB_txn* idle = env.reader()) {
            if (mdb_txn_renew(idle) == 0) {
                txn_ = idle;
                return;
            }
            // Whatever failed (a map another process grew, a slot taken
            // back), a new handle below meets it again and handles it.
            mdb_txn_abort(idle);
        }
        int rc = mdb_txn_begin(env.raw(), nullptr, MDB_RDONLY, &txn_);
        if (rc == MDB_MAP_RESIZED) {
            lock_.unlock();
            if (!adopt) throw MapResized{};
            env.adopt_resize();
            continue;
        }
        // Every slot taken: free those of dead processes, then try once more.
        if (rc == MDB_READERS_FULL && !retried && env.reader_check() > 0) {
            retried = true;
            lock_.unlock();
            continue;
        }
        if (rc) throw_lmdb(rc, "mdb_txn_begin(read)");
        return;
    }
}

ReadTxn::~ReadTxn() {
    if (!txn_) return;
    // Reset while the resize lock is still held: the snapshot is released
    // before the map may move.
    mdb_txn_reset(txn_);
    env_->idle(txn_);
}

Cursor::Cursor(MDB_txn* txn, MDB_dbi dbi) {
    int rc = mdb_cursor_open(txn, dbi, &cur_);
    if (rc) throw_lmdb(rc, "mdb_cursor_open");
}

Cursor::~Cursor() {
    if (cur_) mdb_cursor_close(cur_);
}

bool Cursor::op(MDB_val& k, MDB_val& v, MDB_cursor_op o) {
    int rc = mdb_cursor_get(cur_, &k, &v, o);
    if (rc == MDB_NOTFOUND) return false;
    if (rc) throw_lmdb(rc, "mdb_cursor_get");
    return true;
}

Env::Env(const std::string& dir, const Options& o) : dir_(dir), readonly_(o.readonly) {
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) {
        if (!o.create || o.readonly) throw NotFound("store directory does not exist: " + dir);
        if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
            throw Error("cannot create store directory " + dir + ": " + std::strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
        throw InvalidArgument("path is not a directory: " + dir);
    }
    // Before LMDB touches lock.mdb: a second open in this process would reset it.
    claim_ = OpenClaim(dir, OpenClaim::Purpose::open);
    int rc = mdb_env_create(&env_);
    if (rc) throw_lmdb(rc, "mdb_env_create");
    mdb_env_set_maxdbs(env_, o.max_dbs);
    mdb_env_set_maxreaders(env_, o.max_readers);
    mdb_env_set_mapsize(env_, o.initial_map);
    // NOTLS: read transactions are not tied to a thread (pybind11 calls come
    // from any Python thread). NORDAHEAD: vectors are read at random.
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
    if (o.readonly) flags |= MDB_RDONLY;
    if (!o.sync) flags |= MDB_NOSYNC;
    guard_data_file(dir, !o.readonly);
    // Every open reads the table directory (the main tree) through LMDB's
    // map: check its pages first, so a damaged one is an error, not a crash.
    if (stat((dir + "/data.mdb").c_str(), &st) == 0 && st.st_size > 0) {
        std::vector<std::string> damage = check_pages(dir, false);
        if (!damage.empty()) throw Corrupt(damage.front() + " (in " + dir + ")");
    }
    rc = mdb_env_open(env_, dir.c_str(), flags, 0644);
    if (rc) {
        mdb_env_close(env_);
        env_ = nullptr;
        if (rc == ENOENT) throw NotFound("no store in " + dir);
        throw_lmdb(rc, ("mdb_env_open(" + dir + ")").c_str());
    }
    // Every open holds data.mdb shared, so that repair can tell it has the
    // store to itself (Exclusive); a repair in progress elsewhere refuses it.
    mdb_filehandle_t fd = -1;
    if (mdb_env_get_fd(env_, &fd) == 0) fd_ = fd;
    if (fd_ >= 0 && flock(fd_, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        mdb_env_close(env_);
        env_ = nullptr;
        throw Error("the store at " + dir + " is being repaired by another process: open it when that is done");
    }
    // A store opened after a reader process died must not keep its slot.
    int dead = 0;
    mdb_reader_check(env_, &dead);
    // If the file is already bigger than what we asked for, adopt its size.
    MDB_envinfo info;
    mdb_env_info(env_, &info);
    if (info.me_mapsize < o.initial_map) mdb_env_set_mapsize(env_, o.initial_map);
}

Env::~Env() {
    // Every handle must be freed before its environment closes.
    for (MDB_txn* t : idle_) mdb_txn_abort(t);
    idle_.clear();
    if (env_) mdb_env_close(env_);
}

MDB_txn* Env::reader() {
    std::lock_guard<std::mutex> g(idle_mu_);
    if (idle_.empty()) return nullptr;
    MDB_txn* t = idle_.back();
    idle_.pop_back();
    return t;
}

void Env::idle(MDB_txn* txn) {
    {
        std::lock_guard<std::mutex> g(idle_mu_);
        if (idle_.size() < kIdleReaders) {
            idle_.push_back(txn);
            return;
        }
    }
    mdb_txn_abort(txn);
}

MDB_dbi Env::open_db(const char* name, unsigned flags) {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_, nullptr, readonly_ ? MDB_RDONLY : 0, &txn);
    // Another process grew the map since this one opened: adopt its size.
    for (int i = 0; rc == MDB_MAP_RESIZED && i < 100; ++i) {
        adopt_resize();
        rc = mdb_txn_begin(env_, nullptr, readonly_ ? MDB_RDONLY : 0, &txn);
    }
    if (rc) throw_lmdb(rc, "mdb_txn_begin(open_db)");
    MDB_dbi dbi;
    rc = mdb_dbi_open(txn, name, flags | (readonly_ ? 0 : MDB_CREATE), &dbi);
    if (rc) {
        mdb_txn_abort(txn);
        if (rc == MDB_NOTFOUND) throw Corrupt(std::string("store has no '") + name + "' table");
        throw_lmdb(rc, (std::string("mdb_dbi_open(") + name + ")").c_str());
    }
    rc = mdb_txn_commit(txn);
    if (rc) throw_lmdb(rc, "mdb_txn_commit(open_db)");
    return dbi;
}

void Env::write(const std::function<void(MDB_txn*)>& fn) {
    if (readonly_) throw Error("store is open read-only");
    for (;;) {
        std::shared_lock<std::shared_mutex> lock(resize_mu_);
        MDB_txn* txn = nullptr;
        int rc = mdb_txn_begin(env_, nullptr, 0, &txn);
        if (rc == MDB_MAP_RESIZED) {
            lock.unlock();
            adopt_resize();
            continue;
        }
        if (rc) throw_lmdb(rc, "mdb_txn_begin(write)");
        try {
            if (on_begin_) on_begin_(mdb_txn_id(txn));
            fn(txn);
        } catch (const MapFull&) {
            mdb_txn_abort(txn);
            lock.unlock();
            grow();
            continue;
        } catch (...) {
            mdb_txn_abort(txn);
            throw;
        }
        try {
            check_same_file();
        } catch (...) {
            mdb_txn_abort(txn);
            throw;
        }
        const uint64_t id = mdb_txn_id(txn);
        rc = mdb_txn_commit(txn);  // frees txn whatever the outcome
        if (rc == MDB_MAP_FULL) {
            lock.unlock();
            grow();
            continue;
        }
        // LMDB reports a short write as EIO: on a full device, it is that.
        if (rc == EIO && device_full(env_)) rc = ENOSPC;
        if (rc) throw_lmdb(rc, "mdb_txn_commit");
        if (on_commit_) on_commit_(id);
        return;
    }
}

void Env::check_same_file() const {
    // One fstat and one stat a commit: the open file still has a name, and
    // the name still leads to it.
    if (fd_ < 0) return;
    struct stat open_st, path_st;
    const std::string path = dir_ + "/data.mdb";
    bool same = fstat(fd_, &open_st) == 0 && open_st.st_nlink > 0 && stat(path.c_str(), &path_st) == 0 &&
                open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino;
    if (!same)
        throw StoreMoved("the store's file " + path +
                         " was deleted or replaced while the store was open; nothing was written: reopen the store");
}

Env::Exclusive::Exclusive(Env& env) : env_(env) {
    if (env.fd_ < 0) return;
    if (flock(env.fd_, LOCK_EX | LOCK_NB) == 0) return;
    flock(env.fd_, LOCK_SH | LOCK_NB);  // a failed conversion may have dropped the shared lock
    throw Error("the store at " + env.dir_ +
                " is open in another process: close it there first (repair needs the store to itself)");
}

Env::Exclusive::~Exclusive() {
    if (env_.fd_ >= 0) flock(env_.fd_, LOCK_SH);
}

void Env::adopt_resize() {
    std::unique_lock<std::shared_mutex> lock(resize_mu_);
    int rc = mdb_env_set_mapsize(env_, 0);
    if (rc) throw_lmdb(rc, "mdb_env_set_mapsize(0)");
}

void Env::grow() {
    // A dead reader's slot pins old pages, so the file could not reuse them.
    reader_check();
    std::unique_lock<std::shared_mutex> lock(resize_mu_);
    MDB_envinfo info;
    mdb_env_info(env_, &info);
    // Doubling up to 4 GiB, then 4 GiB steps: few replays, little waste.
    size_t cur = info.me_mapsize;
    size_t step = cur < (size_t(4) << 30) ? cur : (size_t(4) << 30);
    int rc = mdb_env_set_mapsize(env_, cur + step);
    if (rc) throw_lmdb(rc, "mdb_env_set_mapsize");
}

size_t Env::map_size() const {
    MDB_envinfo info;
    mdb_env_info(env_, &info);
    return info.me_mapsize;
}

int Env::reader_check() {
    int dead = 0;
    mdb_reader_check(env_, &dead);
    return dead;
}

bool get(MDB_txn* txn, MDB_dbi dbi, MDB_val key, MDB_val& out) {
    int rc = mdb_get(txn, dbi, &key, &out);
    if (rc == MDB_NOTFOUND) return false;
    if (rc) throw_lmdb(rc, "mdb_get");
    return true;
}

bool put(MDB_txn* txn, MDB_dbi dbi, MDB_val key, MDB_val v, unsigned flags) {
    int rc = mdb_put(txn, dbi, &key, &v, flags);
    if (rc == MDB_KEYEXIST) return false;
    if (rc) throw_lmdb(rc, "mdb_put");
    return true;
}

bool del(MDB_txn* txn, MDB_dbi dbi, MDB_val key, const MDB_val* v) {
    MDB_val vv;
    if (v) vv = *v;
    int rc = mdb_del(txn, dbi, &key, v ? &vv : nullptr);
    if (rc == MDB_NOTFOUND) return false;
    if (rc) throw_lmdb(rc, "mdb_del");
    return true;
}

size_t entries(MDB_txn* txn, MDB_dbi dbi) {
    MDB_stat st;
    int rc = mdb_stat(txn, dbi, &st);
    if (rc) throw_lmdb(rc, "mdb_stat");
    return st.ms_entries;
}

}  // namespace agentsensus
