// SPDX-License-Identifier: Apache-2.0
#include "dataload/resize.h"

#include <algorithm>
#include <vector>
#include <cmath>
#include <new>

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

namespace mlos::dataload {
namespace {

// Standard deviation (source pixels) of the pre-filter for a shrink by
// `factor`; 0 when not shrinking.
double prefilter_sigma(double factor) { return factor > 1.0 ? std::sqrt((factor * factor - 1.0) / 6.0) : 0.0; }

// The pre-filter's radius (source pixels); as a double where the estimate
// must not overflow an int for any header's dimensions.
double kernel_reach(double sigma) { return sigma > 0 ? std::ceil(2.5 * sigma) : 0.0; }
int kernel_radius(double sigma) { return static_cast<int>(kernel_reach(sigma)); }

cv::Mat wrap(ImageView v) {
  return cv::Mat(v.height, v.width, CV_8UC3, const_cast<uint8_t*>(v.data), v.stride);
}

// Blurs roi (a view into a larger image, whose pixels around it are used
// as context) into scratch.filtered; returns roi itself when no blur is due.
cv::Mat prefilter(const cv::Mat& roi, double sigma_x, double sigma_y, DecodeScratch& scratch) {
  if (sigma_x <= 0 && sigma_y <= 0) return roi;
  cv::Mat out(roi.rows, roi.cols, CV_8UC3,
              scratch.filtered.ensure(static_cast<size_t>(roi.rows) * roi.cols * kRgbChannels));
  const cv::Size ksize(2 * kernel_radius(sigma_x) + 1, 2 * kernel_radius(sigma_y) + 1);
  // A zero sigma means "derive from ksize" to OpenCV; with ksize 1 any
  // tiny positive sigma gives the identity in that direction.
  cv::GaussianBlur(roi, out, ksize, sigma_x > 0 ? sigma_x : 1e-6, sigma_y > 0 ? sigma_y : 1e-6,
                   cv::BORDER_REPLICATE);
  return out;
}

bool rect_inside(const RectD& r, ImageView src) {
  return r.width > 0 && r.height > 0 && r.x >= 0 && r.y >= 0 && r.x + r.width <= src.width + 1e-9 &&
         r.y + r.height <= src.height + 1e-9;
}

}  // namespace

int resize_context_margin(double factor) { return kernel_radius(prefilter_sigma(factor)) + 1; }

double resize_work(double src_width, double src_height, Size source_size, Size dst_size,
                   const ResizeOptions& options) {
  const double dst_pixels = static_cast<double>(dst_size.width) * dst_size.height;
  const double fx = src_width / dst_size.width;
  const double fy = src_height / dst_size.height;
  double work = dst_pixels * kResampleWorkPerOutputPixel;
  if (options.filter == ResizeFilter::kArea && fx >= 1.0 && fy >= 1.0) {
    work += src_width * src_height * kAreaWorkPerSourcePixel;
  } else if (options.filter == ResizeFilter::kAntialiasedLinear) {
    const double rx = kernel_reach(prefilter_sigma(fx));
    const double ry = kernel_reach(prefilter_sigma(fy));
    if (rx > 0 || ry > 0) {
      // The widest box resize_rgb filters: the exact path's, whose edges
      // are the rectangle's rounded outwards plus (radius + 2) each side.
      const double box_w = std::min<double>(source_size.width, std::ceil(src_width) + 1 + 2 * (rx + 2));
      const double box_h = std::min<double>(source_size.height, std::ceil(src_height) + 1 + 2 * (ry + 2));
      work += box_w * box_h * ((2 * rx + 1) + (2 * ry + 1));
    }
  }
  return work;
}

void use_single_threaded_resize() {
  cv::setNumThreads(1);
  // OpenCV sets itself up on first use (it counts the CPUs with
  // sched_getaffinity, sizes its pool): run every path once now, so that
  // none of that happens later under a system-call filter.
  std::vector<uint8_t> pixels(64 * 64 * kRgbChannels, 128), out(16 * 16 * kRgbChannels);
  const ImageView src{pixels.data(), 64, 64, 64 * kRgbChannels};
  const MutableImageView dst{out.data(), 16, 16, 16 * kRgbChannels};
  DecodeScratch scratch;
  for (const RectD rect : {RectD{0, 0, 64, 64}, RectD{0.5, 0.25, 40.5, 50.75}, RectD{2, 2, 8, 8}}) {
    (void)resize_rgb(src, rect, dst, ResizeOptions{}, scratch);
  }
}

Status resize_rgb(ImageView src, const RectD& src_rect, MutableImageView dst, const ResizeOptions& options,
                  DecodeScratch& scratch) {
  if (src.data == nullptr || dst.data == nullptr || dst.width <= 0 || dst.height <= 0 ||
      src.stride < static_cast<size_t>(src.width) * kRgbChannels ||
      dst.stride < static_cast<size_t>(dst.width) * kRgbChannels) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "resize: empty image or stride shorter than a row");
  }
  if (!rect_inside(src_rect, src)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "resize: source rectangle empty or outside the source");
  }
  const double fx = src_rect.width / dst.width;
  const double fy = src_rect.height / dst.height;
  const bool antialias = options.filter == ResizeFilter::kAntialiasedLinear;
  const double sigma_x = antialias ? prefilter_sigma(fx) : 0.0;
  const double sigma_y = antialias ? prefilter_sigma(fy) : 0.0;
  const cv::Mat whole = wrap(src);
  cv::Mat out = wrap(dst);
  const uchar* const out_data = out.data;
  try {
    const bool whole_pixels = src_rect.x == std::floor(src_rect.x) && src_rect.y == std::floor(src_rect.y) &&
                              src_rect.width == std::floor(src_rect.width) &&
                              src_rect.height == std::floor(src_rect.height);
    if (options.exact_subpixel && !whole_pixels && options.filter != ResizeFilter::kArea) {
      // Filter a whole-pixel box around the rectangle (plus the bilinear
      // tap and the kernel's reach), then sample it at the exact centres:
      // output pixel (u, v) <- source (x + (u + 0.5) fx - 0.5, ...).
      const int pad_x = kernel_radius(sigma_x) + 2;
      const int pad_y = kernel_radius(sigma_y) + 2;
      const int x0 = std::max(0, static_cast<int>(std::floor(src_rect.x)) - pad_x);
      const int y0 = std::max(0, static_cast<int>(std::floor(src_rect.y)) - pad_y);
      const int x1 = std::min(src.width, static_cast<int>(std::ceil(src_rect.x + src_rect.width)) + pad_x);
      const int y1 = std::min(src.height, static_cast<int>(std::ceil(src_rect.y + src_rect.height)) + pad_y);
      const cv::Mat box = prefilter(whole(cv::Rect(x0, y0, x1 - x0, y1 - y0)), sigma_x, sigma_y, scratch);
      const cv::Matx23d to_source(fx, 0, src_rect.x - x0 + 0.5 * fx - 0.5,  //
                                  0, fy, src_rect.y - y0 + 0.5 * fy - 0.5);
      cv::warpAffine(box, out, to_source, out.size(), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP, cv::BORDER_REPLICATE);
    } else {
      const int x0 = std::clamp(static_cast<int>(std::lround(src_rect.x)), 0, src.width - 1);
      const int y0 = std::clamp(static_cast<int>(std::lround(src_rect.y)), 0, src.height - 1);
      const int x1 = std::clamp(static_cast<int>(std::lround(src_rect.x + src_rect.width)), x0 + 1, src.width);
      const int y1 = std::clamp(static_cast<int>(std::lround(src_rect.y + src_rect.height)), y0 + 1, src.height);
      const cv::Mat roi = prefilter(whole(cv::Rect(x0, y0, x1 - x0, y1 - y0)), sigma_x, sigma_y, scratch);
      const bool area = options.filter == ResizeFilter::kArea && fx >= 1.0 && fy >= 1.0;
      cv::resize(roi, out, out.size(), 0, 0, area ? cv::INTER_AREA : cv::INTER_LINEAR);
    }
  } catch (const cv::Exception& e) {
    return make_error(MLOS_ERR_SYSTEM, std::string("resize: OpenCV: ") + e.what());
  } catch (const std::bad_alloc&) {
    return make_error(MLOS_ERR_NO_MEMORY, "resize: out of memory for the filtered region");
  }
  if (out.data != out_data) {
    // OpenCV reallocates a destination of the wrong size or type; ours is
    // built to match, so this would be a bug, not bad input.
    return make_error(MLOS_ERR_SYSTEM, "resize: OpenCV wrote to a buffer of its own");
  }
  return Status::Ok();
}

}  // namespace mlos::dataload
