#include "index/scan_rows.hpp"

#include <algorithm>
#include <cmath>

namespace agentsensus {

namespace {

// Ids are handed out in sequence, so rows are found by an array indexed by
// id; an id far beyond that (a damaged file) is left to the f32 path
// rather than grow the array without bound.
constexpr uint64_t kDenseSlack = 1 << 16;

}  // namespace

ScanRows::ScanRows(size_t dim, Metric metric) : dim_(dim), metric_(metric) {}

// quantize_i8 (quantize.cpp): vectorized, and built so that its rounding
// is exact; a scan encodes its query once per call and each row once.
void ScanRows::encode(const float* v, int8_t* out, Meta& m) const { quantize_i8(v, dim_, out, m.scale, m.err, m.norm); }

bool ScanRows::put(uint64_t id, const float* v) {
    if (id >= row_of_.size()) {
        if (id >= 8 * (uint64_t(live_) + kDenseSlack) && id >= id_limit_) return false;
        row_of_.resize(std::max<uint64_t>(id + 1, row_of_.size() * 3 / 2), kNone);
    }
    uint32_t r = row_of_[id];
    if (r == kNone) {
        if (!free_.empty()) {
            r = free_.back();
            free_.pop_back();
        } else {
            r = static_cast<uint32_t>(meta_.size());
            meta_.emplace_back();
            data_.resize(data_.size() + dim_);
        }
        row_of_[id] = r;
        ++live_;
    }
    encode(v, data_.data() + size_t(r) * dim_, meta_[r]);
    return true;
}

void ScanRows::erase(uint64_t id) {
    if (id >= row_of_.size() || row_of_[id] == kNone) return;
    free_.push_back(row_of_[id]);
    row_of_[id] = kNone;
    --live_;
}

ScanRows::Query ScanRows::quantize(const float* q) const {
    Query out;
    out.q.resize(dim_);
    Meta m{};
    encode(q, out.q.data(), m);
    out.scale = m.scale;
    out.err = m.err;
    out.norm = m.norm;
    out.norm2 = m.norm * m.norm;
    return out;
}

void ScanRows::prefetch(uint64_t id) const {
    if (id >= row_of_.size() || row_of_[id] == kNone) return;
    const char* p = reinterpret_cast<const char*>(data_.data() + size_t(row_of_[id]) * dim_);
    for (size_t at = 0; at < dim_; at += 64) __builtin_prefetch(p + at);
}

bool ScanRows::bounds(const Query& q, uint64_t id, float& lo, float& hi) const {
    if (id >= row_of_.size() || row_of_[id] == kNone) return false;
    uint32_t r = row_of_[id];
    const Meta& m = meta_[r];
    float d = q.scale * m.scale * float(dot_i8(q.q.data(), data_.data() + size_t(r) * dim_, dim_));
    // q.v - q'.v' = q.(v - v') + v'.(q - q'), so by Cauchy-Schwarz the error
    // is at most |q| err(v) + |v'| err(q), |v'| <= |v| + err(v); the last
    // term covers the rounding of the exact f32 kernel it is compared with.
    float e = q.norm * m.err + (m.norm + m.err) * q.err + 1e-5f * (q.norm * m.norm + 1.f);
    if (metric_ == Metric::l2sq) {
        // -(|q|^2 + |v|^2 - 2 q.v): twice the dot's error.
        float s = 2.f * d - q.norm2 - m.norm * m.norm;
        lo = s - 2.f * e - 1e-5f * (q.norm2 + m.norm * m.norm);
        hi = s + 2.f * e + 1e-5f * (q.norm2 + m.norm * m.norm);
    } else {
        lo = d - e;
        hi = d + e;
    }
    return true;
}

bool ScanRows::bounds_f32(const float* q, const Query& qq, uint64_t id, float& lo, float& hi) const {
    if (id >= row_of_.size() || row_of_[id] == kNone) return false;
    uint32_t r = row_of_[id];
    const Meta& m = meta_[r];
    float d = float(double(m.scale) * dot_f32_i8(q, data_.data() + size_t(r) * dim_, dim_));
    // q.v - q.v' = q.(v - v') <= |q| err(v); the last term covers the
    // rounding of the exact f32 kernel it is compared with.
    float e = qq.norm * m.err + 1e-5f * (qq.norm * m.norm + 1.f);
    if (metric_ == Metric::l2sq) {
        float s = 2.f * d - qq.norm2 - m.norm * m.norm;
        lo = s - 2.f * e - 1e-5f * (qq.norm2 + m.norm * m.norm);
        hi = s + 2.f * e + 1e-5f * (qq.norm2 + m.norm * m.norm);
    } else {
        lo = d - e;
        hi = d + e;
    }
    return true;
}

}  // namespace agentsensus
