// SPDX-License-Identifier: Apache-2.0
// PostgresJobStore: claims, the per-executor leases that let several executors (on any nodes) run
// one job at once: acquire, next_items, renew, release, reclaim_leases (postgres_job_store.h has
// the protocol). Lock order, so that no two calls wait on each other in a cycle: the job row first
// (FOR NO KEY UPDATE, by every call that changes the job or deletes claims), then claim rows, then
// items; next_items and renew take no job-row lock and never wait on one. No call locks a job row
// FOR UPDATE, so the foreign-key checks of inserts (events, claims) never wait either.
#include <algorithm>
#include <map>
#include <utility>

#include "jobs/job_store_common.h"
#include "jobs/postgres_job_store.h"
#include "jobs/postgres_job_store_internal.h"

namespace synapse::jobs {
namespace {

// Pending items of job $1 that the claim of epoch $2 may take at time $3: unclaimed, its own, or
// handed to a claim that has ended or run out.
constexpr std::string_view kClaimable =
    "(i.claim_epoch IS NULL OR i.claim_epoch = $2 OR NOT EXISTS (SELECT 1 FROM job_claims c "
    "WHERE c.job_id = i.job_id AND c.epoch = i.claim_epoch AND c.deadline_ms > $3))";

// A job in `state` lets a claim write when it is running and the claim stands: `job_cancelled`
// after a cancel, `lease_lost` otherwise.
Status check_claim_state(const Lease& lease, std::string_view state, bool claim_stands) {
  if (state == "cancelled") {
    return Status(ErrorCode::kJobCancelled, "job " + lease.job_id + " was cancelled");
  }
  if (state != "running") {
    return Status(ErrorCode::kLeaseLost,
                  "the lease of job " + lease.job_id + " at epoch " + std::to_string(lease.epoch) +
                      " is no longer current (job " + std::string(state) + ")");
  }
  if (!claim_stands) {
    return Status(ErrorCode::kLeaseLost,
                  "the lease of job " + lease.job_id + " at epoch " + std::to_string(lease.epoch) +
                      " has ended (it ran out and was taken over, or its node was found dead)");
  }
  return ok_status();
}

}  // namespace

Result<int64_t> PostgresJobStore::lock_claim(const Lease& lease) {
  // The job row's lock: a takeover, a cancel or another claim's commit waits until this
  // transaction ends, so what is checked here holds at commit. Claims are deleted only under it
  // (or, by reclaim_leases, only those of dead nodes).
  SYN_ASSIGN_OR_RETURN(
      PgResult job, db_.query("SELECT j.state, j.page_count, EXISTS (SELECT 1 FROM job_claims c "
                              "WHERE c.job_id = j.id AND c.epoch = $2) FROM jobs j WHERE j.id = $1 "
                              "FOR NO KEY UPDATE OF j",
                              PgParams().add(lease.job_id).add(lease.epoch)));
  if (job.rows() == 0) return job_not_found(lease.job_id);
  SYN_RETURN_IF_ERROR(check_claim_state(lease, job.text(0, 0), job.text(0, 2) == "t"));
  return job.integer(0, 1);
}

Status PostgresJobStore::delete_finished_claims() {
  return db_
      .query(
          "DELETE FROM job_claims c USING jobs j WHERE c.job_id = j.id AND "
          "j.state NOT IN ('queued', 'running')")
      .status();
}

Result<std::optional<Lease>> PostgresJobStore::acquire(std::string_view owner,
                                                       int64_t lease_duration_ms) {
  if (lease_duration_ms <= 0) {
    return Status(ErrorCode::kInvalidArgument, "a lease lasts a positive time");
  }
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  // Batch before background, oldest first: a queued job; a running one whose claims all ran out
  // (its executors died); or a running one with enough unclaimed items to share, only when no
  // job of its class is waiting (an idle executor starts a waiting job before it helps with a
  // running one). SKIP LOCKED: a job another node is acquiring or committing to right now is
  // passed over, never waited for.
  const std::string sql =
      "SELECT j.id, j.class, j.state, j.lease_owner FROM jobs j WHERE j.execution_deadline_ms > $1 "
      "AND ("
      "  (j.state = 'queued' AND j.not_before_ms <= $1) OR "
      "  (j.state = 'running' AND (NOT EXISTS (SELECT 1 FROM job_claims c WHERE c.job_id = j.id "
      "     AND c.deadline_ms > $1) OR "
      "   (SELECT count(*) FROM (SELECT 1 FROM items i WHERE i.job_id = j.id AND "
      "     i.state = 'pending' AND i.not_before_ms <= $1 AND "
      "     (i.claim_epoch IS NULL OR NOT EXISTS (SELECT 1 FROM job_claims c "
      "      WHERE c.job_id = i.job_id AND c.epoch = i.claim_epoch AND c.deadline_ms > $1)) "
      "     LIMIT $2) free) >= $2))) "
      "ORDER BY j.class = 'background', j.state = 'running' AND EXISTS (SELECT 1 FROM job_claims "
      "c WHERE c.job_id = j.id AND c.deadline_ms > $1), j.seq "
      "LIMIT 1 FOR NO KEY UPDATE OF j SKIP LOCKED";
  SYN_ASSIGN_OR_RETURN(
      PgResult found,
      db_.query(sql, PgParams().add(now).add(std::max<int64_t>(options_.min_items_to_share, 1))));
  if (found.rows() == 0) return std::optional<Lease>();
  Lease lease{.job_id = found.text(0, 0),
              .owner = std::string(owner),
              .deadline_ms = now + lease_duration_ms,
              .job_class = job_class_from_name(found.text(0, 1)).value_or(JobClass::kBatch)};
  const bool was_running = found.text(0, 2) == "running";
  const std::string previous_owner = found.text(0, 3);
  // One statement: claims that ran out end here (their executors are fenced off, lease_lost, and
  // their items are free; a claim renewed meanwhile is kept, its deadline checked again on the
  // row), the job's epoch counter gives the new claim its epoch (unique in the job: the job
  // row is locked), the claim is inserted, and the live claims of others are counted.
  SYN_ASSIGN_OR_RETURN(
      PgResult claimed,
      db_.query("WITH ended AS (DELETE FROM job_claims WHERE job_id = $1 AND deadline_ms <= $2 "
                "RETURNING owner), "
                "job AS (UPDATE jobs SET state = 'running', lease_owner = $3, lease_node = $4, "
                "lease_epoch = lease_epoch + 1, attempts = attempts + 1, updated_ms = $2 "
                "WHERE id = $1 RETURNING lease_epoch), "
                "claim AS (INSERT INTO job_claims(job_id, epoch, owner, node, deadline_ms) "
                "SELECT $1, lease_epoch, $3, $4, $5 FROM job RETURNING epoch) "
                "SELECT (SELECT epoch FROM claim), (SELECT count(*) FROM job_claims "
                "WHERE job_id = $1 AND deadline_ms > $2), (SELECT owner FROM ended LIMIT 1)",
                PgParams()
                    .add(lease.job_id)
                    .add(now)
                    .add(pg_text(owner))
                    .add(node_id_)
                    .add(lease.deadline_ms)));
  if (claimed.is_null(0, 0)) return Status(ErrorCode::kInternal, "leased job vanished");
  lease.epoch = claimed.integer(0, 0);
  const int64_t sharing = claimed.integer(0, 1);
  const std::optional<std::string> ended_owner = claimed.optional_text(0, 2);
  std::string detail =
      "owner " + lease.owner + ", node " + node_id_ + ", epoch " + std::to_string(lease.epoch);
  if (sharing > 0) {
    detail += ", shared with " + std::to_string(sharing) + " other executor(s)";
  } else if (was_running) {
    detail += ", taken over from expired lease of " + ended_owner.value_or(previous_owner);
  }
  SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "leased", detail));
  SYN_RETURN_IF_ERROR(txn.commit());
  return std::optional<Lease>(std::move(lease));
}

Result<NextItems> PostgresJobStore::next_items(const Lease& lease, int64_t max_items) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  // No job-row lock: claims of one job hand out items side by side. A cancel or takeover that
  // commits after this check is seen by the claim's next call (and its commit is refused).
  SYN_ASSIGN_OR_RETURN(PgResult job,
                       db_.query("SELECT j.state, EXISTS (SELECT 1 FROM job_claims c "
                                 "WHERE c.job_id = j.id AND c.epoch = $2) FROM jobs j "
                                 "WHERE j.id = $1",
                                 PgParams().add(lease.job_id).add(lease.epoch)));
  if (job.rows() == 0) return job_not_found(lease.job_id);
  SYN_RETURN_IF_ERROR(check_claim_state(lease, job.text(0, 0), job.text(0, 1) == "t"));
  // Claims the first claimable items, counts each hand-out before the executor runs anything (a
  // crash after this point shows up as an execution without a result) and records the range on
  // the claim, in one statement. SKIP LOCKED: items another claim is taking right now are left
  // to it, so two claims asking at once get disjoint ranges. MATERIALIZED: the pick runs once
  // (as a semi-join's inner side it could be scanned again per row, and with the rows it already
  // updated, hand out more than `max_items`). The claim's row update is also the proof that the
  // claim still stands: its row stays locked until commit, so a takeover that ends it waits and
  // then finds these items stamped with an epoch that no longer exists (free again).
  SYN_ASSIGN_OR_RETURN(
      PgResult rows,
      db_.query("WITH picked AS MATERIALIZED (SELECT i.idx FROM items i WHERE i.job_id = $1 AND "
                "i.state = 'pending' AND i.not_before_ms <= $3 AND " +
                    std::string(kClaimable) +
                    " ORDER BY i.idx LIMIT $4 FOR UPDATE OF i SKIP LOCKED), "
                    "handed AS (UPDATE items SET executed_count = executed_count + 1, "
                    "claim_epoch = $2 FROM picked WHERE items.job_id = $1 AND "
                    "items.idx = picked.idx RETURNING items.idx, custom_id, url, body, attempts, "
                    "executed_count - 1 AS before), "
                    "claim AS (UPDATE job_claims SET first_idx = (SELECT min(idx) FROM picked), "
                    "last_idx = (SELECT max(idx) FROM picked) WHERE job_id = $1 AND epoch = $2 "
                    "AND EXISTS (SELECT 1 FROM picked) RETURNING epoch) "
                    "SELECT h.idx, h.custom_id, h.url, h.body, h.attempts, h.before, "
                    "(SELECT count(*) FROM claim) FROM handed h",
                PgParams()
                    .add(lease.job_id)
                    .add(lease.epoch)
                    .add(now)
                    .add(std::max<int64_t>(max_items, 0))));
  if (rows.rows() > 0 && rows.integer(0, 6) == 0) {
    return check_claim_state(lease, "running", false);  // ended meanwhile: rolls back
  }
  NextItems next;
  for (int row = 0; row < rows.rows(); ++row) {
    next.items.push_back(WorkItem{.index = rows.integer(row, 0),
                                  .custom_id = rows.text(row, 1),
                                  .url = rows.text(row, 2),
                                  .body = rows.text(row, 3),
                                  .attempts = rows.integer(row, 4),
                                  .executed_before = rows.integer(row, 5)});
  }
  // RETURNING gives no order: index order is part of the contract.
  std::sort(next.items.begin(), next.items.end(),
            [](const WorkItem& a, const WorkItem& b) { return a.index < b.index; });
  if (next.items.empty()) {
    // Nothing to hand out: items waiting out a back-off (when is the first due), or items other
    // live claims hold (they finish the job).
    SYN_ASSIGN_OR_RETURN(
        PgResult left,
        db_.query("SELECT MIN(i.not_before_ms) FILTER (WHERE " + std::string(kClaimable) +
                      "), count(*) FILTER (WHERE NOT " + std::string(kClaimable) +
                      ") FROM items i WHERE i.job_id = $1 AND i.state = 'pending'",
                  PgParams().add(lease.job_id).add(lease.epoch).add(now)));
    next.next_retry_ms = left.optional_integer(0, 0);
    next.held_by_others = left.integer(0, 1);
    return next;  // nothing written: the transaction rolls back
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return next;
}

Result<int64_t> PostgresJobStore::renew(Lease& lease, int64_t lease_duration_ms) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t deadline = now_ms() + lease_duration_ms;
  // One statement, no job-row lock: renewing never waits behind another claim's commit.
  SYN_ASSIGN_OR_RETURN(
      PgResult renewed,
      db_.query("UPDATE job_claims c SET deadline_ms = $3 FROM jobs j WHERE c.job_id = $1 AND "
                "c.epoch = $2 AND j.id = c.job_id AND j.state = 'running' RETURNING c.epoch",
                PgParams().add(lease.job_id).add(lease.epoch).add(deadline)));
  if (renewed.rows() == 0) {
    SYN_ASSIGN_OR_RETURN(PgResult job, db_.query("SELECT state FROM jobs WHERE id = $1",
                                                 PgParams().add(lease.job_id)));
    if (job.rows() == 0) return job_not_found(lease.job_id);
    return check_claim_state(lease, job.text(0, 0), false);
  }
  lease.deadline_ms = deadline;
  return deadline;
}

Status PostgresJobStore::release(const Lease& lease, int64_t not_before_ms) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(lock_claim(lease).status());
  // This claim ends; its items are free for the job's other claims (or the next acquire).
  SYN_RETURN_IF_ERROR(db_.query("DELETE FROM job_claims WHERE job_id = $1 AND epoch = $2",
                                PgParams().add(lease.job_id).add(lease.epoch))
                          .status());
  SYN_ASSIGN_OR_RETURN(PgResult others,
                       db_.query("SELECT owner, node FROM job_claims WHERE job_id = $1 AND "
                                 "deadline_ms > $2 ORDER BY epoch DESC",
                                 PgParams().add(lease.job_id).add(now)));
  if (others.rows() > 0) {
    // Other executors hold the job: it stays running with them.
    PgParams params;
    params.add(others.text(0, 0));
    params.add_optional(others.optional_text(0, 1));
    params.add(now).add(lease.job_id);
    SYN_RETURN_IF_ERROR(db_.query("UPDATE jobs SET lease_owner = $1, lease_node = $2, "
                                  "updated_ms = $3 WHERE id = $4",
                                  params)
                            .status());
    SYN_RETURN_IF_ERROR(add_event(lease.job_id, now, "released",
                                  "epoch " + std::to_string(lease.epoch) + ", " +
                                      std::to_string(others.rows()) +
                                      " other executor(s) go on with the job"));
    return txn.commit();
  }
  // The last claim: back to the queue (claims that ran out end with it).
  SYN_RETURN_IF_ERROR(
      db_.query("DELETE FROM job_claims WHERE job_id = $1", PgParams().add(lease.job_id)).status());
  SYN_RETURN_IF_ERROR(
      db_.query("UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_node = NULL, "
                "not_before_ms = $1, updated_ms = $2 WHERE id = $3",
                PgParams().add(not_before_ms).add(now).add(lease.job_id))
          .status());
  SYN_RETURN_IF_ERROR(add_event(
      lease.job_id, now, "released",
      "until " + std::to_string(not_before_ms) + ", epoch " + std::to_string(lease.epoch)));
  return txn.commit();
}

Result<int64_t> PostgresJobStore::reclaim_leases(std::string_view owner_prefix) {
  const std::lock_guard lock(mutex_);
  SYN_RETURN_IF_ERROR(ready());
  const int64_t now = now_ms();
  SYN_ASSIGN_OR_RETURN(PgTransaction txn, PgTransaction::begin(db_));
  // Claims only (no job-row lock): a dead node has no transaction in flight to race with.
  SYN_ASSIGN_OR_RETURN(
      PgResult claims,
      db_.query("SELECT c.job_id, c.epoch, c.owner, c.node FROM job_claims c JOIN jobs j "
                "ON j.id = c.job_id WHERE j.state = 'running' AND starts_with(c.owner, $1) AND "
                "c.node IS DISTINCT FROM $2 FOR UPDATE OF c SKIP LOCKED",
                PgParams().add(pg_text(owner_prefix)).add(node_id_)));
  // A node is dead when its lock is free: taking it (until this transaction ends) proves it.
  std::map<std::string, bool> node_dead;
  int64_t reclaimed = 0;
  for (int row = 0; row < claims.rows(); ++row) {
    const std::string node = claims.text(row, 3);
    auto dead = node_dead.find(node);
    if (dead == node_dead.end()) {
      SYN_ASSIGN_OR_RETURN(PgResult probe,
                           db_.query("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))",
                                     PgParams().add(node)));
      dead = node_dead.emplace(node, claims.is_null(row, 3) || probe.text(0, 0) == "t").first;
    }
    if (!dead->second) continue;
    const std::string job_id = claims.text(row, 0);
    SYN_RETURN_IF_ERROR(db_.query("DELETE FROM job_claims WHERE job_id = $1 AND epoch = $2",
                                  PgParams().add(job_id).add(claims.integer(row, 1)))
                            .status());
    SYN_RETURN_IF_ERROR(add_event(job_id, now, "lease reclaimed",
                                  "from dead executor " + claims.text(row, 2) + " (node " + node +
                                      ", epoch " + std::to_string(claims.integer(row, 1)) + ")"));
    ++reclaimed;
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return reclaimed;
}

}  // namespace synapse::jobs
