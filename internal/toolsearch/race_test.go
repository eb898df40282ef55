//go:build race

package toolsearch

// raceSlowdown scales time bounds under the race detector, which makes
// the index's map and slice work several times slower.
const raceSlowdown = 30
