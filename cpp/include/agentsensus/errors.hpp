// Exceptions the engine throws; the bindings map each to one Python type.
#pragma once
#include <stdexcept>
#include <string>

namespace agentsensus {

// Base of every engine error (Python: agentsensus.Error).
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Bad input; nothing was written (Python: ValueError).
struct InvalidArgument : Error {
    using Error::Error;
};

// A record, key or owner that does not exist (Python: KeyError).
struct NotFound : Error {
    using Error::Error;
};

// The files on disk are not a sound store (Python: agentsensus.CorruptStoreError).
struct Corrupt : Error {
    using Error::Error;
};

// LMDB refused a damaged page: the transaction that met it is unusable, so
// code that reports damage and carries on must let this one through.
struct DamagedPage : Corrupt {
    using Corrupt::Corrupt;
};

// The file system has no space left for a commit (ENOSPC, or LMDB's EIO
// for a short write on a full device); the transaction was not committed,
// so nothing is lost (Python: agentsensus.StoreFullError).
struct StoreFull : Error {
    using Error::Error;
};

// The store's file was deleted or replaced while the store was open (its
// directory removed, another file renamed over data.mdb): a commit would go
// to a file nobody can open again, so the transaction was not committed and
// nothing is acknowledged (Python: agentsensus.StoreMovedError). Like
// SQLite's SQLITE_READONLY_DBMOVED.
struct StoreMoved : Error {
    using Error::Error;
};

// An LMDB call failed for a reason other than the ones handled internally.
struct LmdbError : Error {
    int code;
    LmdbError(int rc, const std::string& what);
};

}  // namespace agentsensus
