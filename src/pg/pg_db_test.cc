// SPDX-License-Identifier: Apache-2.0
#include "pg/pg_db.h"

#include <gtest/gtest.h>

#include "pg/pg_test_server.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

TEST(PgDb, RedactedConninfoNeverShowsThePassword) {
  EXPECT_EQ(redacted_conninfo("postgresql://alice:s3cret@db.example:5433/jobs?sslmode=require"),
            "postgresql://alice@db.example:5433/jobs");
  EXPECT_EQ(redacted_conninfo("host=db port=5432 user=bob password=hunter2 dbname=q"),
            "postgresql://bob@db:5432/q");
  EXPECT_EQ(redacted_conninfo("postgresql://%zz"), "postgresql://(unparsable)");
  EXPECT_TRUE(is_postgres_url("postgresql://h/db"));
  EXPECT_TRUE(is_postgres_url("postgres://h/db"));
  EXPECT_FALSE(is_postgres_url("/var/lib/synapse/jobs.db"));
  EXPECT_FALSE(is_postgres_url("postgresql.db"));
}

TEST(PgDb, UnreachableServerIsUnavailableWithoutThePassword) {
  testing::TempDir dir;
  Result<PgDb> db =
      PgDb::connect("host=" + dir.path() + " port=1 user=u password=topsecret dbname=x");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(db.status().is_transient());
  EXPECT_EQ(db.status().to_string().find("topsecret"), std::string::npos);
}

TEST(PgDb, QueriesTypesAndTransactions) {
  SYN_REQUIRE_POSTGRES(server);
  Result<std::string> name = server->create_database();
  ASSERT_TRUE(name.ok()) << name.status().to_string();
  Result<PgDb> db = PgDb::connect(server->conninfo(*name));
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  ASSERT_TRUE(db->exec("CREATE TABLE t(k TEXT PRIMARY KEY, n BIGINT, b BYTEA)").ok());
  const std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(db->query("INSERT INTO t VALUES ($1, $2, $3)",
                        PgParams().add("x").add(int64_t{-7}).add_bytes(binary))
                  .ok());
  Result<PgResult> row = db->query("SELECT k, n, b, NULL::bigint FROM t");
  ASSERT_TRUE(row.ok()) << row.status().to_string();
  ASSERT_EQ(row->rows(), 1);
  EXPECT_EQ(row->text(0, 0), "x");
  EXPECT_EQ(row->integer(0, 1), -7);
  EXPECT_EQ(row->bytes(0, 2), binary);
  EXPECT_FALSE(row->optional_integer(0, 3).has_value());

  // A duplicate key is already_exists; a transaction not committed leaves nothing.
  EXPECT_EQ(db->query("INSERT INTO t(k) VALUES ('x')").status().code(), ErrorCode::kAlreadyExists);
  {
    Result<PgTransaction> txn = PgTransaction::begin(*db);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(db->query("INSERT INTO t(k) VALUES ('y')").ok());
  }
  EXPECT_EQ(db->query("SELECT 1 FROM t WHERE k = 'y'")->rows(), 0);
  {
    Result<PgTransaction> txn = PgTransaction::begin(*db);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(db->query("INSERT INTO t(k) VALUES ('z')").ok());
    ASSERT_TRUE(txn->commit().ok());
  }
  EXPECT_EQ(db->query("SELECT 1 FROM t WHERE k = 'z'")->rows(), 1);
}

TEST(PgDb, ACutConnectionIsUnavailableAndReconnects) {
  SYN_REQUIRE_POSTGRES(server);
  Result<std::string> name = server->create_database();
  ASSERT_TRUE(name.ok()) << name.status().to_string();
  Result<PgDb> db = PgDb::connect(server->conninfo(*name));
  ASSERT_TRUE(db.ok()) << db.status().to_string();
  ASSERT_TRUE(server->terminate_connections(*name).ok());
  const Status lost = db->query("SELECT 1").status();
  EXPECT_EQ(lost.code(), ErrorCode::kUnavailable) << lost.to_string();
  EXPECT_TRUE(db->broken());
  ASSERT_TRUE(db->reconnect().ok());
  Result<PgResult> again = db->query("SELECT 41 + 1");
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->integer(0, 0), 42);
}

}  // namespace
}  // namespace synapse
