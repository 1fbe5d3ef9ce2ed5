// SPDX-License-Identifier: Apache-2.0
// What partial decoding saves: one ImageNet-sized JPEG (500x375, q90),
// RandomResizedCrop(224) crops, single thread. Baseline: full decode, then
// resize the crop. Against it: region decode at the DCT scale chosen for
// the crop, then resize. Same crops (64 from a fixed seed) in every case.
//
// The image comes from bench/make_dataload_bench_image.py (a real photo);
// pass its path as MLOS_DATALOAD_BENCH_IMAGE. Without it a synthetic image
// is encoded in-process (less photo-like entropy: faster to decode).
//
// Measured on the shared 2-core dev machine (CPU ms per image, median of 3,
// +-15 % noise between runs):
//   500x375 coffee: full decode+resize 0.96-1.05; region decode (crop only,
//     no DCT scale applies: 4/8 would be < 224) + resize 0.71-0.87; full
//     decode alone 0.72; whole train sample (f32 CHW) 0.85-0.93.
//   1000x750 astronaut: full decode+resize 3.65-3.73; region at DCT scale
//     (mean 5.3/8: 4/8 or 8/8) + resize 1.82-1.89 (about 2x); val sample
//     3.36 without DCT scaling, 1.90-2.11 with.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "dataload/crop_sampler.h"
#include "dataload/jpeg_decode.h"
#include "dataload/resize.h"
#include "dataload/sample_decode.h"

#include <jpeglib.h>

namespace mlos::dataload {
namespace {

std::vector<uint8_t> synthetic_jpeg(int w, int h) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / w);
      p[1] = static_cast<uint8_t>((x * y) % 251);
      p[2] = static_cast<uint8_t>(y * 255 / h);
    }
  jpeg_compress_struct c;
  jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = &rgb[static_cast<size_t>(c.next_scanline) * w * 3];
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> bytes(out, out + size);
  std::free(out);
  return bytes;
}

const std::vector<uint8_t>& image() {
  static const std::vector<uint8_t> bytes = [] {
    if (const char* path = std::getenv("MLOS_DATALOAD_BENCH_IMAGE")) {
      std::ifstream in(path, std::ios::binary);
      std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
      if (!b.empty()) return b;
      std::fprintf(stderr, "cannot read %s; using a synthetic image\n", path);
    }
    return synthetic_jpeg(500, 375);
  }();
  return bytes;
}

const std::vector<RectI>& crops() {
  static const std::vector<RectI> c = [] {
    auto header = read_jpeg_header(image());
    SeededRandom random(2024);
    std::vector<RectI> v;
    for (int i = 0; i < 64; ++i) v.push_back(sample_random_resized_crop(header->size.width, header->size.height, {}, random));
    return v;
  }();
  return c;
}

RectD as_d(RectI r) { return RectD{double(r.x), double(r.y), double(r.width), double(r.height)}; }

// Baseline: full decode + resize of the crop.
void BM_FullDecodeThenResize(benchmark::State& state) {
  use_single_threaded_resize();
  DecodeScratch scratch;
  std::vector<uint8_t> out(224 * 224 * 3);
  const ResizeOptions ro{ResizeFilter::kAntialiasedLinear, state.range(0) != 0};
  size_t i = 0;
  for (auto _ : state) {
    auto full = decode_jpeg(image(), {}, scratch);
    if (!full.ok()) state.SkipWithError("decode failed");
    const RectI c = crops()[i++ % crops().size()];
    if (!resize_rgb(full->view, as_d(c), {out.data(), 224, 224, 672}, ro, scratch).ok()) state.SkipWithError("resize");
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_FullDecodeThenResize)->ArgName("exact")->Arg(0)->Arg(1);

// Region decode at the crop's DCT scale + resize (what decode_train_sample does).
void BM_RegionDctDecodeThenResize(benchmark::State& state) {
  use_single_threaded_resize();
  DecodeScratch scratch;
  std::vector<uint8_t> out(224 * 224 * 3);
  const ResizeOptions ro{ResizeFilter::kAntialiasedLinear, state.range(0) != 0};
  size_t i = 0;
  double scale_sum = 0;
  for (auto _ : state) {
    const RectI c = crops()[i++ % crops().size()];
    JpegRegionRequest rq{as_d(c), choose_dct_scale(c.width, c.height, {224, 224}), 0};
    rq.margin = resize_context_margin(std::max(c.width * rq.scale_num / 8.0 / 224, c.height * rq.scale_num / 8.0 / 224));
    scale_sum += rq.scale_num;
    auto region = decode_jpeg_region(image(), rq, {}, scratch);
    if (!region.ok()) state.SkipWithError("decode failed");
    if (!resize_rgb(region->view, region->crop_in_view, {out.data(), 224, 224, 672}, ro, scratch).ok())
      state.SkipWithError("resize");
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["mean_scale_num"] = scale_sum / state.iterations();
}
BENCHMARK(BM_RegionDctDecodeThenResize)->ArgName("exact")->Arg(0)->Arg(1);

// Region decode at full size (crop only, no DCT scaling) + resize.
void BM_RegionFullScaleDecodeThenResize(benchmark::State& state) {
  use_single_threaded_resize();
  DecodeScratch scratch;
  std::vector<uint8_t> out(224 * 224 * 3);
  size_t i = 0;
  for (auto _ : state) {
    const RectI c = crops()[i++ % crops().size()];
    auto region = decode_jpeg_region(image(), JpegRegionRequest{as_d(c), 8, 3}, {}, scratch);
    if (!region.ok()) state.SkipWithError("decode failed");
    if (!resize_rgb(region->view, region->crop_in_view, {out.data(), 224, 224, 672}, {}, scratch).ok())
      state.SkipWithError("resize");
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_RegionFullScaleDecodeThenResize);

// The whole image at DCT scale n/8: libjpeg-turbo has SIMD inverse DCTs
// for 8/8 and the reduced 4/8, 2/8, 1/8 only; 3, 5, 6, 7 use scalar C.
void BM_WholeImageAtScale(benchmark::State& state) {
  DecodeScratch scratch;
  auto header = read_jpeg_header(image());
  const JpegRegionRequest rq{RectD{0, 0, double(header->size.width), double(header->size.height)},
                             static_cast<int>(state.range(0)), 0};
  for (auto _ : state) benchmark::DoNotOptimize(decode_jpeg_region(image(), rq, {}, scratch).ok());
}
BENCHMARK(BM_WholeImageAtScale)->ArgName("scale_num")->DenseRange(1, 8);

void BM_FullDecodeOnly(benchmark::State& state) {
  DecodeScratch scratch;
  for (auto _ : state) benchmark::DoNotOptimize(decode_jpeg(image(), {}, scratch).ok());
}
BENCHMARK(BM_FullDecodeOnly);

// Whole samples: header, crop, region decode, resize, flip, float32 CHW.
void BM_TrainSample(benchmark::State& state) {
  use_single_threaded_resize();
  DecodeScratch scratch;
  SeededRandom random(7);
  SampleOptions o;
  o.resize.exact_subpixel = state.range(0) != 0;
  std::vector<float> out(3 * 224 * 224);
  for (auto _ : state) {
    auto r = decode_train_sample(image(), random, o, scratch, {out.data(), out.size() * 4});
    if (!r.ok()) state.SkipWithError("sample failed");
  }
}
BENCHMARK(BM_TrainSample)->ArgName("exact")->Arg(0)->Arg(1);

void BM_ValSample(benchmark::State& state) {
  use_single_threaded_resize();
  DecodeScratch scratch;
  SampleOptions o;
  o.resize.exact_subpixel = state.range(0) != 0;
  o.dct_scaling = state.range(1) != 0;
  std::vector<float> out(3 * 224 * 224);
  for (auto _ : state) {
    auto r = decode_val_sample(image(), o, scratch, {out.data(), out.size() * 4});
    if (!r.ok()) state.SkipWithError("sample failed");
  }
}
BENCHMARK(BM_ValSample)->ArgNames({"exact", "dct"})->Args({0, 0})->Args({0, 1})->Args({1, 1});

}  // namespace
}  // namespace mlos::dataload

BENCHMARK_MAIN();
