// SPDX-License-Identifier: Apache-2.0
// Replays a fuzz target's corpus as an ordinary test: runs
// LLVMFuzzerTestOneInput on every file of the directories given as
// arguments. Built with any compiler; libFuzzer itself is only needed to
// grow the corpus (scripts/fuzz.sh).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++files;
    }
  }
  printf("corpus replay: %d passed, 0 failed\n", files);
  return files > 0 ? 0 : 1;
}
