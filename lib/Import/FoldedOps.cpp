//===- FoldedOps.cpp - ops whose output shape depends on input values -----===//
//
// mcc compiles static shapes, so NonMaxSuppression and Unique can only be
// compiled when their inputs are known at compile time (literals, or graph
// inputs frozen with --const-input); they are then evaluated here, as the
// ONNX reference does, and become constants.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include <algorithm>
#include <cstring>
#include <numeric>

using namespace mlir;

namespace mcc {
namespace {

/// Whether box j overlaps box i by more than `threshold` (intersection over
/// union), in float like the reference; corners [y1, x1, y2, x2] in either
/// order, or [x_center, y_center, width, height] with centerPointBox.
bool suppressByIou(const float *a, const float *b, bool centerPointBox,
                   float threshold) {
  float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (!centerPointBox) {
    ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]);
    ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
    bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]);
    by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
  } else {
    ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2;
    ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
    bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2;
    by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  }
  float ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1);
  if (ix1 <= ix0)
    return false;
  float iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (iy1 <= iy0)
    return false;
  float inter = (ix1 - ix0) * (iy1 - iy0);
  float areaA = (ax1 - ax0) * (ay1 - ay0), areaB = (bx1 - bx0) * (by1 - by0);
  float uni = areaA + areaB - inter;
  if (inter <= 0 || areaA <= 0 || areaB <= 0 || uni <= 0)
    return false;
  return inter / uni > threshold;
}

LogicalResult lowerNonMaxSuppression(NodeLowering &n) {
  if (failed(n.requireLiterals(
          {0, 1, 2, 3, 4},
          "NonMaxSuppression (its output shape depends on the values)")))
    return failure();
  const Shape &bs = n.shape(0), &ss = n.shape(1);
  if (bs.size() != 3 || bs[2] != 4 || ss.size() != 3 || ss[0] != bs[0] ||
      ss[2] != bs[1])
    return n.fail("boxes " + formatShape(bs) + " and scores " +
                  formatShape(ss) + " do not fit");
  int64_t batches = bs[0], classes = ss[1], count = bs[1];
  int64_t maxOut = 0;
  if (n.hasInput(2) && n.literal(2).size() > 0)
    maxOut = std::max<int64_t>(0, n.literal(2).getI(0));
  float iou = 0, scoreThreshold = 0;
  if (n.hasInput(3) && n.literal(3).size() > 0)
    iou = n.literal(3).getAsDouble(0);
  bool haveScoreThreshold = n.hasInput(4) && n.literal(4).size() > 0;
  if (haveScoreThreshold)
    scoreThreshold = n.literal(4).getAsDouble(0);
  bool center = n.attrInt("center_point_box", 0) != 0;
  const Literal &boxL = n.literal(0), &scoreL = n.literal(1);
  std::vector<float> boxes(boxL.size()), scores(scoreL.size());
  for (int64_t i = 0; i < boxL.size(); ++i)
    boxes[i] = boxL.getAsDouble(i);
  for (int64_t i = 0; i < scoreL.size(); ++i)
    scores[i] = scoreL.getAsDouble(i);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float *s = &scores[(b * classes + c) * count];
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < count; ++i)
        if (!haveScoreThreshold || s[i] > scoreThreshold)
          candidates.push_back(i);
      // Highest score first; equal scores by lower index.
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : candidates) {
        if ((int64_t)kept.size() >= maxOut)
          break;
        bool keep = true;
        for (int64_t k : kept)
          if (suppressByIou(&boxes[(b * count + i) * 4],
                            &boxes[(b * count + k) * 4], center, iou)) {
            keep = false;
            break;
          }
        if (!keep)
          continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  Literal r(kInt64, {(int64_t)selected.size() / 3, 3});
  for (size_t i = 0; i < selected.size(); ++i)
    r.setI(i, selected[i]);
  n.setOutput(0, std::move(r));
  return success();
}

LogicalResult lowerUnique(NodeLowering &n) {
  if (failed(n.requireLiterals(
          {0}, "Unique (its output shape depends on the values)")))
    return failure();
  const Literal &x = n.literal(0);
  Shape in = x.shape();
  bool flat = !n.hasAttr("axis");
  int64_t axis = 0;
  if (flat) {
    in = {x.size()};
  } else {
    axis = normalizeAxis(n.attrInt("axis", 0), in.size());
    if (axis < 0 || axis >= (int64_t)in.size())
      return n.fail("axis out of range");
  }
  bool sorted = n.attrInt("sorted", 1) != 0;
  // Slices along the axis: element k of slice s is at outer * (len * inner)
  // + s * inner + inner index.
  int64_t len = in[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < in.size(); ++d)
    inner *= in[d];
  for (int64_t d = 0; d < axis; ++d)
    outer *= in[d];
  int64_t per = inner * outer;
  auto element = [&](int64_t s, int64_t k) {
    return (k / inner) * len * inner + s * inner + k % inner;
  };
  int32_t dt = x.dtype();
  // -1, 0, 1 comparing two elements by value.
  auto cmpElem = [&](int64_t i, int64_t j) -> int {
    if (isFloatDType(dt)) {
      double a = x.getF(i), b = x.getF(j);
      return a < b ? -1 : a > b ? 1 : 0;
    }
    if (dt == kUInt64) {
      uint64_t a = x.getI(i), b = x.getI(j);
      return a < b ? -1 : a > b ? 1 : 0;
    }
    int64_t a = x.getI(i), b = x.getI(j);
    return a < b ? -1 : a > b ? 1 : 0;
  };
  auto cmpSlice = [&](int64_t s, int64_t t) {
    for (int64_t k = 0; k < per; ++k)
      if (int c = cmpElem(element(s, k), element(t, k)))
        return c;
    return 0;
  };
  std::vector<int64_t> order(len);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t s, int64_t t) { return cmpSlice(s, t) < 0; });
  // Groups of equal slices in sorted order; each is represented by its
  // first occurrence (the stable sort puts it first).
  std::vector<int64_t> firsts, counts, groupOf(len);
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || cmpSlice(order[i - 1], order[i]) != 0) {
      firsts.push_back(order[i]);
      counts.push_back(0);
    }
    groupOf[order[i]] = firsts.size() - 1;
    ++counts.back();
  }
  // Output order of the groups: by value, or by first occurrence.
  std::vector<int64_t> groups(firsts.size());
  std::iota(groups.begin(), groups.end(), 0);
  if (!sorted)
    std::sort(groups.begin(), groups.end(),
              [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
  std::vector<int64_t> rank(groups.size());
  for (size_t i = 0; i < groups.size(); ++i)
    rank[groups[i]] = i;
  int64_t u = groups.size();
  Shape yShape = in;
  yShape[axis] = u;
  Literal y(dt, yShape);
  int64_t es = dtypeSize(dt);
  for (int64_t g = 0; g < u; ++g)
    for (int64_t k = 0; k < per; ++k) {
      int64_t src = element(firsts[groups[g]], k);
      int64_t dst = (k / inner) * u * inner + g * inner + k % inner;
      std::memcpy(y.mutableData() + dst * es, x.data() + src * es, es);
    }
  n.setOutput(0, std::move(y));
  Literal indices(kInt64, {u}), inverse(kInt64, {len}), cnt(kInt64, {u});
  for (int64_t g = 0; g < u; ++g) {
    indices.setI(g, firsts[groups[g]]);
    cnt.setI(g, counts[groups[g]]);
  }
  for (int64_t s = 0; s < len; ++s)
    inverse.setI(s, rank[groupOf[s]]);
  n.setOutput(1, std::move(indices));
  n.setOutput(2, std::move(inverse));
  n.setOutput(3, std::move(cnt));
  return success();
}

} // namespace

void registerFoldedLowerings() {
  opLowerings()["NonMaxSuppression"] = lowerNonMaxSuppression;
  opLowerings()["Unique"] = lowerUnique;
}

} // namespace mcc
