#include "format/record_meta.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <set>
#include <vector>

#include "agentsensus/errors.hpp"
#include "agentsensus/limits.hpp"
#include "agentsensus/visible_text.hpp"

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
