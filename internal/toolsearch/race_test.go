//go:build race

package toolsearch

// raceSlowdown scales time bounds under the race detector, which makes
// the SQLite engine (C translated to Go) tens of times slower.
const raceSlowdown = 30
