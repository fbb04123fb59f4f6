// SPDX-License-Identifier: Apache-2.0
#include "base/hash.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

TEST(Hash, Sha256KnownAnswers) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(to_hex(sha256(as_bytes(""))),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256(as_bytes("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256(as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Hash, Xxh3KnownAnswers) {
  // Reference values of XXH3 for the empty input (xxHash's own test suite).
  EXPECT_EQ(xxh3_64(as_bytes("")), 0x2D06800538D394C2ull);
  const Hash128 empty = xxh3_128(as_bytes(""));
  EXPECT_EQ(empty.high, 0x99AA06D3014798D8ull);
  EXPECT_EQ(empty.low, 0x6001C324468D497Full);
  EXPECT_EQ(empty.to_hex(), "99aa06d3014798d86001c324468d497f");
  EXPECT_NE(xxh3_64(as_bytes("a")), xxh3_64(as_bytes("b")));
  EXPECT_NE(xxh3_64(as_bytes("a"), 1), xxh3_64(as_bytes("a"), 2));
}

TEST(Hash, StreamingMatchesOneShot) {
  std::vector<uint8_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  Xxh3Hasher128 xxh;
  Sha256Hasher sha;
  for (size_t offset = 0; offset < data.size(); offset += 777) {
    const size_t n = std::min<size_t>(777, data.size() - offset);
    xxh.update({data.data() + offset, n});
    sha.update({data.data() + offset, n});
  }
  EXPECT_EQ(xxh.digest(), xxh3_128(data));
  EXPECT_EQ(sha.finish(), sha256(data));
}

TEST(Hash, Sha1MatchesTheStandardVectors) {
  // FIPS 180's "abc" and git's object id of the blob "hello\n" (`git hash-object`).
  Sha1Hasher abc;
  abc.update(as_bytes("abc"));
  EXPECT_EQ(to_hex(abc.finish()), "a9993e364706816aba3e25717850c26c9cd0d89d");
  Sha1Hasher blob;
  blob.update(as_bytes(std::string_view("blob 6\0", 7)));
  blob.update(as_bytes("hello\n"));
  EXPECT_EQ(to_hex(blob.finish()), "ce013625030ba8dba906f756967f9e9ca394464a");
}

TEST(Hash, Sha256OfFile) {
  testing::TempDir dir;
  testing::write_file_bytes(dir.file("abc"), {'a', 'b', 'c'});
  const Result<Sha256Digest> digest = sha256_file(dir.file("abc"));
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(*digest, sha256(as_bytes("abc")));
  EXPECT_EQ(sha256_file(dir.file("missing")).status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace synapse
