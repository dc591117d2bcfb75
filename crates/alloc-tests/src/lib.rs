//! Nothing here: the tests in `tests/` check that Floodgate's hot path allocates nothing, counting the
//! allocations of the measuring thread only (so the test harness's own threads cannot disturb them).
