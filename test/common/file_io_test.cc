// Whole-file reads and writes (common/file_io.h), with errors that name the path.
#include "common/file_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fracpack::file_io_test {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's temporary directory.
std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("file_io_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(FileIo, WhatIsWrittenIsReadBackByteForByte) {
  const std::string path = fresh_dir("roundtrip") + "/f.bin";
  std::string content = "line 1\r\nline 2\n";
  content.push_back('\0');
  content += "\xff\xfe after a NUL";
  ASSERT_TRUE(write_file(path, content).ok());
  auto r = read_file(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, content);
  EXPECT_EQ(fs::file_size(path), content.size());
}

TEST(FileIo, AnEmptyFileReadsAsEmpty) {
  const std::string path = fresh_dir("empty") + "/e";
  ASSERT_TRUE(write_file(path, "").ok());
  auto r = read_file(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "");
}

TEST(FileIo, WritingReplacesTheWholeFile) {
  const std::string path = fresh_dir("replace") + "/f";
  ASSERT_TRUE(write_file(path, "a long first content").ok());
  ASSERT_TRUE(write_file(path, "short").ok());
  auto r = read_file(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "short");
}

TEST(FileIo, AMissingFileIsAnErrorNamingThePath) {
  const std::string path = fresh_dir("missing") + "/nothing-here";
  auto r = read_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find(path), std::string::npos) << r.message();
}

TEST(FileIo, AnUnwritablePathIsAnErrorNamingThePath) {
  const std::string path = fresh_dir("unwritable") + "/no-such-folder/f";
  auto s = write_file(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(path));
}

TEST(FileIo, AFolderIsNotAFileToWrite) {
  const std::string dir = fresh_dir("folder");
  auto s = write_file(dir, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir), std::string::npos) << s.message();
}

// Found by the tests-mirror work: a folder read as an empty file, successfully.
TEST(FileIo, AFolderIsNotAFileToRead) {
  const std::string dir = fresh_dir("read_folder");
  auto r = read_file(dir);
  ASSERT_FALSE(r.ok()) << "read " << r->size() << " bytes";
  EXPECT_NE(r.message().find(dir), std::string::npos) << r.message();
}

}  // namespace
}  // namespace fracpack::file_io_test
