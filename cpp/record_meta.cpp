#include "record_meta.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <set>
#include <vector>

#include "errors.hpp"
#include "limits.hpp"
#include "store.hpp"
#include "visible_text.hpp"

namespace agentsensus {

uint64_t now_micros() {
    using namespace std::chrono;
    return static_cast<uint64_t>(duration_cast<microseconds>(system_clock::now().time_since_epoch()).count());
}

namespace {

// A recursive-descent JSON reader over one value. Depth is bounded so that a
// hostile metadata value cannot exhaust the stack.
class JsonReader {
public:
    explicit JsonReader(std::string_view s) : s_(s) {}

    bool at_end() {
        ws();
        return i_ == s_.size();
    }
    bool peek(char c) {
        ws();
        return i_ < s_.size() && s_[i_] == c;
    }
    bool eat(char c) {
        if (!peek(c)) return false;
        ++i_;
        return true;
    }

    // Reads one value; a scalar is stored in out when out is given.
    bool value(JsonValue* out, int depth = 0) {
        if (depth > 64) return false;
        ws();
        if (i_ >= s_.size()) return false;
        char c = s_[i_];
        if (c == '{') return object(out, depth);
        if (c == '[') return array(out, depth);
        if (c == '"') {
            std::string str;
            if (!string(str)) return false;
            if (out) {
                out->kind = JsonValue::kString;
                out->str = std::move(str);
            }
            return true;
        }
        if (word("true") || word("false")) {
            if (out) {
                out->kind = JsonValue::kBool;
                out->b = c == 't';
            }
            return true;
        }
        if (word("null")) {
            if (out) out->kind = JsonValue::kNull;
            return true;
        }
        return number(out);
    }

    // Walks an object; for each key calls visit(key) which returns the
    // JsonValue* to fill (or nullptr to skip).
    template <class Visit> bool members(int depth, Visit visit) {
        if (!eat('{')) return false;
        if (eat('}')) return true;
        for (;;) {
            std::string key;
            ws();
            if (!string(key) || !eat(':')) return false;
            if (!value(visit(key), depth + 1)) return false;
            if (eat('}')) return true;
            if (!eat(',')) return false;
        }
    }

    bool string(std::string& out) {
        if (i_ >= s_.size() || s_[i_] != '"') return false;
        ++i_;
        while (i_ < s_.size()) {
            unsigned char c = static_cast<unsigned char>(s_[i_++]);
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c != '\\') {
                out.push_back(static_cast<char>(c));
                continue;
            }
            if (i_ >= s_.size()) return false;
            char e = s_[i_++];
            switch (e) {
                case '"': out.push_back('"'); break;
                case '\\': out.push_back('\\'); break;
                case '/': out.push_back('/'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': {
                    uint32_t cp = 0;
                    if (!hex4(cp)) return false;
                    if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
                        uint32_t lo = 0;
                        if (i_ + 1 >= s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') return false;
                        i_ += 2;
                        if (!hex4(lo) || lo < 0xDC00 || lo >= 0xE000) return false;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        return false;
                    }
                    utf8(cp, out);
                    break;
                }
                default: return false;
            }
        }
        return false;
    }

private:
    std::string_view s_;
    size_t i_ = 0;

    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    bool word(std::string_view w) {
        if (s_.substr(i_, w.size()) != w) return false;
        i_ += w.size();
        return true;
    }
    bool object(JsonValue* out, int depth) {
        if (out) out->kind = JsonValue::kOther;
        return members(depth, [](const std::string&) -> JsonValue* { return nullptr; });
    }
    bool array(JsonValue* out, int depth) {
        if (out) out->kind = JsonValue::kOther;
        if (!eat('[')) return false;
        if (eat(']')) return true;
        for (;;) {
            if (!value(nullptr, depth + 1)) return false;
            if (eat(']')) return true;
            if (!eat(',')) return false;
        }
    }
    bool number(JsonValue* out) {
        size_t start = i_;
        if (i_ < s_.size() && s_[i_] == '-') ++i_;
        if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') return false;
        if (s_[i_] == '0')
            ++i_;
        else
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        if (i_ < s_.size() && s_[i_] == '.') {
            ++i_;
            if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') return false;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
            if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') return false;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        }
        if (out) {
            out->kind = JsonValue::kNumber;
            // from_chars: no allocation and no locale (a filter parses one per candidate).
            auto r = std::from_chars(s_.data() + start, s_.data() + i_, out->num);
            if (r.ec == std::errc::result_out_of_range)  // beyond double: as strtod, +-inf or 0
                out->num = std::strtod(std::string(s_.substr(start, i_ - start)).c_str(), nullptr);
        }
        return true;
    }
    bool hex4(uint32_t& cp) {
        if (i_ + 4 > s_.size()) return false;
        for (int n = 0; n < 4; ++n) {
            char h = s_[i_++];
            cp <<= 4;
            if (h >= '0' && h <= '9')
                cp |= h - '0';
            else if (h >= 'a' && h <= 'f')
                cp |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F')
                cp |= h - 'A' + 10;
            else
                return false;
        }
        return true;
    }
    static void utf8(uint32_t cp, std::string& out) {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }
};

}  // namespace

bool valid_metadata(std::string_view text, std::string& why) {
    if (text.size() > kMaxMetadataBytes) {
        why = "metadata is " + std::to_string(text.size()) + " bytes, more than the limit of " +
              std::to_string(kMaxMetadataBytes);
        return false;
    }
    JsonReader r(text);
    if (!r.peek('{') || !r.value(nullptr) || !r.at_end()) {
        why = "metadata is not one JSON object";
        return false;
    }
    return true;
}

bool metadata_field(std::string_view text, std::string_view key, JsonValue& out) {
    JsonReader r(text);
    bool found = false;
    bool ok = r.members(0, [&](const std::string& k) -> JsonValue* {
        if (k != key) return nullptr;
        found = true;  // a repeated key: the last one wins, as in Python's json
        return &out;
    });
    return ok && found;
}

}  // namespace agentsensus

// ---------------------------------------------------------------- the store's side tables
//
// The Store members that read and write times and metadata; store.cpp calls
// them from create_record, merge_into, forget and delete_record.

namespace agentsensus {

namespace {
// Unwinds update's write transaction on a conflict: nothing is written.
struct CommitAbortSignal {};
}  // namespace

void Store::read_record_meta(MDB_txn* txn, uint64_t id, uint32_t oid, Row& row) {
    row.has_times = false;
    row.metadata.clear();
    if (!has_record_meta_) return;
    Be64 k(id);
    MDB_val v;
    if (agentsensus::get(txn, db_.times, val(k.b, 8), v)) {
        if (!decode_times(v.mv_data, v.mv_size, row.times))
            throw Corrupt("the times of record " + std::to_string(id) + " are damaged");
        row.has_times = true;
    }
    if (oid == 0) return;
    auto mk = metadata_key(id, oid);
    if (agentsensus::get(txn, db_.metadata, val(mk.data(), mk.size()), v)) row.metadata.assign(view(v));
}

// created: a new record (both times now); else its updated time moves.
// Monotonic per record: a clock stepped back never makes updated < created.
void Store::stamp_times(MDB_txn* txn, uint64_t id, bool created) {
    Be64 k(id);
    RecordTimes t;
    uint64_t now = now_micros();
    MDB_val v;
    if (!created && agentsensus::get(txn, db_.times, val(k.b, 8), v)) {
        if (!decode_times(v.mv_data, v.mv_size, t))
            throw Corrupt("the times of record " + std::to_string(id) + " are damaged");
        t.updated = std::max(now, t.created);
    } else if (!created) {
        return;  // a record from before schema 3: its creation time is unknown, and stays so
    } else {
        t.created = t.updated = now;
    }
    auto b = encode_times(t);
    put(txn, db_.times, val(k.b, 8), val(b.data(), b.size()));
}

void Store::put_metadata(MDB_txn* txn, uint64_t id, uint32_t oid, std::string_view json) {
    std::string why;
    if (!valid_metadata(json, why)) throw InvalidArgument(why);
    auto mk = metadata_key(id, oid);
    put(txn, db_.metadata, val(mk.data(), mk.size()), val(json));
}

void Store::drop_metadata(MDB_txn* txn, uint64_t id, uint32_t oid) {
    if (oid != 0) {
        auto mk = metadata_key(id, oid);
        scrub_del(txn, db_.metadata, val(mk.data(), mk.size()));
        return;
    }
    std::vector<std::array<unsigned char, 12>> keys;
    {
        Cursor c(txn, db_.metadata);
        auto from = metadata_key(id, 0);
        MDB_val k = val(from.data(), from.size()), v;
        for (bool more = c.op(k, v, MDB_SET_RANGE);
             more && k.mv_size == 12 && std::memcmp(k.mv_data, from.data(), 8) == 0; more = c.op(k, v, MDB_NEXT)) {
            std::array<unsigned char, 12> key{};
            std::memcpy(key.data(), k.mv_data, 12);
            keys.push_back(key);
        }
    }
    for (const auto& key : keys) scrub_del(txn, db_.metadata, val(key.data(), key.size()));
}

void Store::drop_times(MDB_txn* txn, uint64_t id) {
    Be64 k(id);
    del(txn, db_.times, val(k.b, 8));
}

bool Store::update(const std::string& owner, uint64_t id, std::string_view expected_text, std::string_view text,
                   const unsigned char* digest, const float* vector, uint32_t round, std::string_view metadata) {
    check_open();
    if (env_->readonly()) throw Error("the store at " + dir_ + " is open read-only");
    if (text.empty() || text.size() > kMaxStatementBytes)
        throw InvalidArgument("statement must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
    if (!has_visible(text)) throw InvalidArgument("statement has no visible character");
    std::string why;
    if (!metadata.empty() && !valid_metadata(metadata, why)) throw InvalidArgument(why);
    std::vector<float> v(dim_);
    prepare_vector(vector, v.data());
    bool done = true;
    try {
        env_->write([&](MDB_txn* txn) {
            Be64 k(id);
            MDB_val rv;
            RecordHeader h;
            std::string_view current;
            if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv)) throw NotFound("no record " + std::to_string(id));
            if (!decode_record(rv, h, current)) throw Corrupt("record " + std::to_string(id) + " is damaged");
            auto oid = owner_id(txn, owner);
            if (!oid || !owns(txn, *oid, id))
                throw NotFound("record " + std::to_string(id) + " is not owned by '" + owner + "'");
            {
                Cursor c(txn, db_.owners);
                MDB_val key = val(k.b, 8), ov;
                size_t n = 0;
                if (c.op(key, ov, MDB_SET)) {
                    int rc = mdb_cursor_count(c.get(), &n);
                    if (rc) throw_lmdb(rc, "mdb_cursor_count");
                }
                if (n != 1)
                    throw InvalidArgument("record " + std::to_string(id) +
                                          " has other owners: only a sole owner updates a record in place");
            }
            const std::string before(current);
            if (before != expected_text) throw CommitAbortSignal{};
            // The record's statements become the one update: row 0, its text the record's.
            delete_said(txn, id, 0);
            if (has_said_) put_said(txn, id, 0, *oid, round, nullptr, {});
            if (text != before) {
                scrub_del(txn, db_.records, val(k.b, 8));
                put(txn, db_.records, val(k.b, 8), val(encode_record(h.round, h.deposit, text)));
                lexical_->retext(txn, id, before, text);
                uint64_t next_merge = meta_u64(txn, kMetaNextMerge, 1);
                put_merge(txn, next_merge, id, *oid, round, text, before);  // what the update let go of
                set_meta_u64(txn, kMetaNextMerge, next_merge + 1);
            }
            scrub_del(txn, db_.vectors, val(k.b, 8));
            put(txn, db_.vectors, val(k.b, 8), val(v.data(), dim_ * sizeof(float)));
            // The index learns the new vector as a delete and an add of the id.
            journal(txn, kDel, id, 0);
            journal(txn, kAdd, id, *oid);
            drop_text_digests(txn, id);
            MDB_val cur;
            if (!agentsensus::get(txn, db_.norms, val(digest, kDigestBytes), cur))
                add_digest(txn, id, val(digest, kDigestBytes));
            stamp_times(txn, id, false);
            if (!metadata.empty()) put_metadata(txn, id, *oid, metadata);
        });
    } catch (const CommitAbortSignal&) {
        done = false;
    }
    sync_index();
    return done;
}

}  // namespace agentsensus

namespace agentsensus {

std::vector<Store::MetaDump> Store::meta_dump(uint64_t after, size_t limit) {
    check_open();
    std::vector<MetaDump> out;
    if (!has_record_meta_) return out;
    ReadTxn t(*env_);
    Cursor c(t.get(), db_.records);
    Be64 from(after + 1);
    MDB_val k = val(from.b, 8), v;
    for (bool more = c.op(k, v, MDB_SET_RANGE); more && out.size() < limit; more = c.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 8) throw Corrupt("a record key is damaged");
        MetaDump d;
        d.id = read_be64(k.mv_data);
        Row r;
        read_record_meta(t.get(), d.id, 0, r);
        d.has_times = r.has_times;
        d.times = r.times;
        Cursor mc(t.get(), db_.metadata);
        auto mfrom = metadata_key(d.id, 0);
        MDB_val mk = val(mfrom.data(), mfrom.size()), mv;
        for (bool m = mc.op(mk, mv, MDB_SET_RANGE);
             m && mk.mv_size == 12 && std::memcmp(mk.mv_data, mfrom.data(), 8) == 0; m = mc.op(mk, mv, MDB_NEXT)) {
            uint32_t oid = read_be32(static_cast<const unsigned char*>(mk.mv_data) + 8);
            d.metadata.emplace_back(owner_name(t.get(), oid), std::string(view(mv)));
        }
        if (d.has_times || !d.metadata.empty()) out.push_back(std::move(d));
    }
    return out;
}

void Store::load_meta(const std::vector<MetaDump>& rows) {
    check_open();
    if (env_->readonly()) throw Error("the store at " + dir_ + " is open read-only");
    for (const MetaDump& d : rows) {
        if (d.has_times && d.times.created > d.times.updated)
            throw InvalidArgument("record " + std::to_string(d.id) + " was updated before it was created");
        for (const auto& m : d.metadata) {
            std::string why;
            if (!valid_metadata(m.second, why)) throw InvalidArgument("record " + std::to_string(d.id) + ": " + why);
        }
    }
    env_->write([&](MDB_txn* txn) {
        for (const MetaDump& d : rows) {
            Be64 k(d.id);
            MDB_val rv;
            if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv))
                throw InvalidArgument("times or metadata name record " + std::to_string(d.id) + ", which is absent");
            if (d.has_times) {
                auto b = encode_times(d.times);
                put(txn, db_.times, val(k.b, 8), val(b.data(), b.size()));
            }
            for (const auto& m : d.metadata) {
                auto oid = owner_id(txn, m.first);
                if (!oid || !owns(txn, *oid, d.id))
                    throw InvalidArgument("metadata of record " + std::to_string(d.id) + " names '" + m.first +
                                          "', who does not own it");
                put_metadata(txn, d.id, *oid, m.second);
            }
        }
    });
}

}  // namespace agentsensus

namespace agentsensus {

std::vector<MergeRow> Store::merges_of(uint64_t id) {
    check_open();
    ReadTxn t(*env_);
    Be64 k(id);
    MDB_val rv;
    if (!agentsensus::get(t.get(), db_.records, val(k.b, 8), rv)) throw NotFound("no record " + std::to_string(id));
    std::vector<MergeRow> out;
    Cursor c(t.get(), db_.rmerges);
    MDB_val key = val(k.b, 8), v;
    bool more = c.op(key, v, MDB_SET);
    if (more) more = c.op(key, v, MDB_FIRST_DUP);
    for (; more; more = c.op(key, v, MDB_NEXT_DUP)) {
        MDB_val mv;
        MergeEntry e;
        if (v.mv_size != 8 || !agentsensus::get(t.get(), db_.merges, v, mv) || !decode_merge(mv, e))
            throw Corrupt("merge log entry of record " + std::to_string(id) + " is damaged");
        out.push_back(MergeRow{read_be64(v.mv_data), e.survivor, std::string(e.kept), std::string(e.discarded),
                               owner_name(t.get(), e.owner), e.round});
    }
    return out;  // rmerges dups are Be64 seqs: byte order is seq order
}

}  // namespace agentsensus

namespace agentsensus {

void Store::verify_record_meta(MDB_txn* txn, const std::set<uint64_t>& records,
                               const std::function<void(std::string)>& bad) {
    if (!has_record_meta_) return;
    Cursor c(txn, db_.times);
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
        RecordTimes t;
        if (k.mv_size != 8 || !decode_times(v.mv_data, v.mv_size, t)) {
            bad("a times row is damaged");
            continue;
        }
        uint64_t id = read_be64(k.mv_data);
        if (!records.count(id)) bad("the times row of record " + std::to_string(id) + " names a missing record");
        if (t.created > t.updated) bad("record " + std::to_string(id) + " was updated before it was created");
    }
    Cursor m(txn, db_.metadata);
    for (bool more = m.op(k, v, MDB_FIRST); more; more = m.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 12) {
            bad("a metadata key is damaged");
            continue;
        }
        uint64_t id = read_be64(k.mv_data);
        uint32_t oid = read_be32(static_cast<const unsigned char*>(k.mv_data) + 8);
        std::string why;
        if (!records.count(id))
            bad("a metadata row names missing record " + std::to_string(id));
        else if (!owns(txn, oid, id))
            bad("the metadata of record " + std::to_string(id) + " names owner id " + std::to_string(oid) +
                ", not an owner of it");
        if (!valid_metadata(view(v), why)) bad("the metadata of record " + std::to_string(id) + ": " + why);
    }
}

void Store::repair_record_meta(MDB_txn* txn, const std::set<uint64_t>& keep) {
    std::vector<std::string> gone_times, gone_meta;
    {
        Cursor c(txn, db_.times);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            RecordTimes t;
            if (k.mv_size != 8 || !decode_times(v.mv_data, v.mv_size, t) || !keep.count(read_be64(k.mv_data)) ||
                t.created > t.updated)
                gone_times.emplace_back(view(k));
        }
        Cursor m(txn, db_.metadata);
        for (bool more = m.op(k, v, MDB_FIRST); more; more = m.op(k, v, MDB_NEXT)) {
            std::string why;
            if (k.mv_size != 12 || !keep.count(read_be64(k.mv_data)) ||
                !owns(txn, read_be32(static_cast<const unsigned char*>(k.mv_data) + 8), read_be64(k.mv_data)) ||
                !valid_metadata(view(v), why))
                gone_meta.emplace_back(view(k));
        }
    }
    for (const std::string& k : gone_times) scrub_del(txn, db_.times, val(k));
    for (const std::string& k : gone_meta) scrub_del(txn, db_.metadata, val(k));
}

}  // namespace agentsensus
