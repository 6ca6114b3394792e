package redisstore

import "strings"

// numSlots is how many hash slots a Redis Cluster has.
const numSlots = 16384

// slotOf is the cluster slot of key: CRC16 (XMODEM) of its hash tag, the part between
// the first '{' and the next '}' when not empty, else of the whole key; as Redis has it.
// go-redis computes the same, in a package of its own that cannot be imported.
func slotOf(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % numSlots
}
