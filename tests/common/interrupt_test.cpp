// Ctrl-C: the signal handler only sets a flag; write_file_atomic publishes nothing once it is set.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "parasim/common/interrupt.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim {
namespace {

namespace fs = std::filesystem;

struct InterruptTest : ::testing::Test {
  void SetUp() override {
    reset_interrupt();
    // One folder per test: ctest runs the tests of this file in parallel processes.
    dir = fs::temp_directory_path() /
          (std::string("parasim_interrupt_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override {
    reset_interrupt();
    fs::remove_all(dir);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  fs::path dir;
};

TEST_F(InterruptTest, SignalsSetTheFlagInsteadOfEndingTheProcess) {
  install_interrupt_handlers();
  EXPECT_FALSE(interrupted());
  EXPECT_NO_THROW(throw_if_interrupted());
  std::raise(SIGINT);
  EXPECT_TRUE(interrupted());
  EXPECT_THROW(throw_if_interrupted(), Interrupted);
  reset_interrupt();
  std::raise(SIGTERM);
  EXPECT_TRUE(interrupted());
}

TEST_F(InterruptTest, NoFileAndNoTemporaryOnceInterrupted) {
  write_file_atomic(dir / "before.json", "{}\n");
  EXPECT_TRUE(fs::exists(dir / "before.json"));
  request_interrupt();
  EXPECT_THROW(write_file_atomic(dir / "after.json", "{}\n"), Interrupted);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);  // before.json only: no after.json, no after.json.tmp.*
  EXPECT_STREQ(Interrupted().what(), "interrupted");
  EXPECT_EQ(kExitInterrupted, 130);
}

}  // namespace
}  // namespace parasim
