// One libFuzzer target (`make fuzz`): SHARDSIM_FUZZ_TARGET names the entry of fuzz_entries.hpp it drives.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const shardsim::fuzz::Target* target = shardsim::fuzz::find_target(SHARDSIM_FUZZ_TARGET);
  target->entry(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
