// The Planfence heads codec (cpp/include/agentsensus/heads_codec.hpp): exact bytes of the wire
// format, round trips, and refusal of every malformed message.
#include "agentsensus/heads_codec.hpp"

#include <string>
#include <vector>

#include "check.hpp"

using namespace agentsensus;

namespace {

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int x : b) s.push_back(static_cast<char>(x));
    return s;
}

}  // namespace

TEST(varint_bytes_are_leb128) {
    std::string s;
    put_varint(s, 0);
    put_varint(s, 127);
    put_varint(s, 128);
    put_varint(s, 300);
    CHECK_EQ(s, bytes({0x00, 0x7f, 0x80, 0x01, 0xac, 0x02}));
    WireReader r(s);
    CHECK_EQ(r.varint(), 0u);
    CHECK_EQ(r.varint(), 127u);
    CHECK_EQ(r.varint(), 128u);
    CHECK_EQ(r.varint(), 300u);
    CHECK(r.ok() && r.done());
    std::string max;
    put_varint(max, UINT64_MAX);
    CHECK_EQ(max.size(), 10u);
    WireReader rm(max);
    CHECK_EQ(rm.varint(), UINT64_MAX);
    CHECK(rm.ok() && rm.done());
}

TEST(varint_reader_refuses_truncated_and_overlong) {
    WireReader cut(bytes({0x80}));
    cut.varint();
    CHECK(!cut.ok());
    // Eleven continuation bytes: longer than any u64.
    WireReader overlong(std::string(11, static_cast<char>(0x80)));
    overlong.varint();
    CHECK(!overlong.ok());
    WireReader b(bytes({0x02, 'a'}));
    b.byte();
    CHECK(b.bytes(2).empty() && !b.ok());
}

TEST(query_is_front_coded) {
    // "plan/a" then "plan/b": the second shares 5 bytes with the first.
    std::string q = encode_query({{"plan/a", 3}, {"plan/b", 200}});
    CHECK_EQ(q, bytes({0x01, 0x02, 0x00, 0x06, 'p', 'l', 'a', 'n', '/', 'a', 0x03, 0x05, 0x01, 'b', 0xc8, 0x01}));
    std::vector<HeadQuery> back;
    CHECK(decode_query(q, back, 10));
    CHECK_EQ(back.size(), 2u);
    CHECK_EQ(back[0].key, std::string("plan/a"));
    CHECK_EQ(back[0].recorded, 3u);
    CHECK_EQ(back[1].key, std::string("plan/b"));
    CHECK_EQ(back[1].recorded, 200u);
}

TEST(query_round_trips_any_keys) {
    std::vector<HeadQuery> q = {{"", 1}, {"a", 0}, {"ab", 7}, {"abc", UINT64_MAX}, {"b", 9}, {"b\0x", 2}};
    q[5].key = std::string("b\0x", 3);  // an embedded NUL is a key byte like any other
    std::vector<HeadQuery> back;
    CHECK(decode_query(encode_query(q), back, q.size()));
    CHECK_EQ(back.size(), q.size());
    for (size_t i = 0; i < q.size() && i < back.size(); ++i) {
        CHECK_EQ(back[i].key, q[i].key);
        CHECK_EQ(back[i].recorded, q[i].recorded);
    }
    std::vector<HeadQuery> empty;
    CHECK(decode_query(encode_query({}), empty, 0));
    CHECK(empty.empty());
}

TEST(query_decoder_refuses_malformed) {
    std::vector<HeadQuery> out;
    std::string good = encode_query({{"plan/a", 3}, {"plan/b", 4}});
    CHECK(decode_query(good, out, 2));
    CHECK(!decode_query("", out, 2));                   // empty
    CHECK(!decode_query(bytes({0x02, 0x00}), out, 2));  // another codec version
    CHECK(!decode_query(good, out, 1));                 // more entries than allowed
    CHECK(!decode_query(good + "x", out, 2));           // trailing bytes
    for (size_t n = 1; n < good.size(); ++n) CHECK(!decode_query(good.substr(0, n), out, 2));  // every truncation
    // The first key cannot share bytes with a previous one.
    CHECK(!decode_query(bytes({0x01, 0x01, 0x01, 0x00, 0x00}), out, 1));
    // A key sharing more bytes than the previous key has.
    CHECK(!decode_query(bytes({0x01, 0x02, 0x00, 0x01, 'a', 0x00, 0x02, 0x00, 0x00}), out, 2));
    // A count larger than the message could hold.
    CHECK(!decode_query(bytes({0x01, 0x7f}), out, 1000));
}

TEST(answer_packs_head_and_same) {
    std::string a = encode_answer({{5, true}, {0, false}, {64, false}});
    CHECK_EQ(a, bytes({0x01, 0x03, 0x0b, 0x00, 0x80, 0x01}));
    std::vector<HeadAnswer> back;
    CHECK(decode_answer(a, 3, back));
    CHECK_EQ(back.size(), 3u);
    CHECK(back[0].head == 5 && back[0].same);
    CHECK(back[1].head == 0 && !back[1].same);
    CHECK(back[2].head == 64 && !back[2].same);
}

TEST(answer_with_an_unrepresentable_head_says_unknown) {
    std::vector<HeadAnswer> back;
    CHECK(decode_answer(encode_answer({{uint64_t(1) << 63, true}}), 1, back));
    CHECK(back.size() == 1 && back[0].head == 0 && !back[0].same);
}

TEST(answer_decoder_refuses_malformed) {
    std::vector<HeadAnswer> out;
    std::string good = encode_answer({{1, false}, {300, true}});
    CHECK(decode_answer(good, 2, out));
    CHECK(!decode_answer(good, 3, out));  // another length than asked
    CHECK(!decode_answer(good + std::string(1, '\0'), 2, out));
    CHECK(!decode_answer(bytes({0x00, 0x00}), 0, out));  // another codec version
    for (size_t n = 0; n < good.size(); ++n) CHECK(!decode_answer(good.substr(0, n), 2, out));
}

CHECK_MAIN
