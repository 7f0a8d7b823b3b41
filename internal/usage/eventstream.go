package usage

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"mime"
	"strings"
)

// AWS Bedrock streams its answers as an AWS event stream
// (application/vnd.amazon.eventstream): binary frames, each a prelude (the
// frame's total length, its headers' length, both big-endian 32-bit, and
// the prelude's CRC-32), headers (":message-type", ":event-type", ...), a
// payload and the frame's CRC-32. converse-stream's payloads are JSON
// events, its metadata event holding the usage; invoke-with-response-stream's
// are chunk events, {"bytes":"<base64>"}, each the JSON of one event of a
// Messages stream. The meter reads the frames as the bytes go by, a frame
// split across writes included, holding at most maxFrameBytes of one.

const (
	preludeLen = 12 // total length, headers length, prelude CRC
	crcLen     = 4  // the frame's CRC, at its end
	// maxFrameBytes bounds a frame the meter reads: usage comes in small
	// events (metadata, message_start, message_delta), and a longer frame
	// (a long text delta) passes unread.
	maxFrameBytes = 16 << 10
)

// eventStreamType is the media type of an AWS event stream.
const eventStreamType = "application/vnd.amazon.eventstream"

// IsEventStream says whether a Content-Type names an AWS event stream.
func IsEventStream(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && strings.EqualFold(media, eventStreamType)
}

// frames is what the meter knows of an event stream between writes: the
// frame it is in, and scratch it reuses from frame to frame.
type frames struct {
	prelude   [preludeLen]byte
	seen      int    // bytes of the current frame seen, its prelude's included
	total     int    // the current frame's length, once its prelude is whole
	headers   int    // the length of its headers
	skip      bool   // the frame is longer than maxFrameBytes, and passes unread
	body      []byte // the frame after its prelude, gathered when it is split across writes
	decoded   []byte // a chunk's payload, decoded
	unescaped []byte // a chunk's base64 text, its escapes taken out
	// lost says a prelude failed its checksum: the framing is lost, and
	// the rest of the stream passes unread.
	lost bool
}

// readFrames reads the frames of an event stream in p, going on from where
// the previous write left off.
func (m *Meter) readFrames(p []byte) {
	f := &m.frames
	for len(p) > 0 && !f.lost {
		if f.seen < preludeLen {
			n := copy(f.prelude[f.seen:], p)
			f.seen, p = f.seen+n, p[n:]
			if f.seen < preludeLen || !f.start() {
				continue
			}
			if rest := f.total - preludeLen; !f.skip && len(p) >= rest {
				// The whole frame is in this write: read it in place.
				m.frame(p[:rest])
				f.seen, p = 0, p[rest:]
				continue
			}
		}
		n := min(f.total-f.seen, len(p))
		if !f.skip {
			f.body = append(f.body, p[:n]...)
		}
		f.seen, p = f.seen+n, p[n:]
		if f.seen == f.total {
			if !f.skip {
				m.frame(f.body)
			}
			f.seen = 0
		}
	}
}

// start reads a whole prelude, and says whether the frame it opens is
// well formed; a frame that is not loses the framing.
func (f *frames) start() bool {
	total := binary.BigEndian.Uint32(f.prelude[0:4])
	headers := binary.BigEndian.Uint32(f.prelude[4:8])
	if crc32.ChecksumIEEE(f.prelude[:8]) != binary.BigEndian.Uint32(f.prelude[8:12]) ||
		total < preludeLen+crcLen || headers > total-preludeLen-crcLen {
		f.lost = true
		return false
	}
	f.total, f.headers = int(total), int(headers)
	f.skip = f.total > maxFrameBytes
	f.body = f.body[:0]
	return true
}

// frame reads one whole frame, given what follows its prelude: an event's
// payload is read for usage; an exception, or a frame that fails its
// checksum, is not.
func (m *Meter) frame(body []byte) {
	f := &m.frames
	end := len(body) - crcLen
	crc := crc32.Update(crc32.ChecksumIEEE(f.prelude[:]), crc32.IEEETable, body[:end])
	if crc != binary.BigEndian.Uint32(body[end:]) {
		return
	}
	messageType, eventType := eventHeaders(body[:f.headers])
	if messageType != nil && string(messageType) != "event" {
		return
	}
	payload := body[f.headers:end]
	if string(eventType) == "chunk" {
		// invoke-with-response-stream: {"bytes":"<base64 event>"}.
		encoded := stringMember(payload, `"bytes"`)
		if bytes.IndexByte(encoded, '\\') >= 0 {
			// A base64 text may come with its slashes escaped (`\/`),
			// which the decoding would refuse. The frame's bytes are the
			// client's, and stay as they are: a copy loses the escapes.
			f.unescaped = f.unescaped[:0]
			for _, c := range encoded {
				if c != '\\' {
					f.unescaped = append(f.unescaped, c)
				}
			}
			encoded = f.unescaped
		}
		if n := base64.StdEncoding.DecodedLen(len(encoded)); cap(f.decoded) < n {
			f.decoded = make([]byte, n)
		}
		n, err := base64.StdEncoding.Decode(f.decoded[:cap(f.decoded)], encoded)
		if err != nil {
			return
		}
		payload = f.decoded[:n]
	}
	m.scan(payload, false)
}

// eventHeaders reads the :message-type and :event-type headers of a frame,
// nil when it has none.
func eventHeaders(h []byte) (messageType, eventType []byte) {
	for len(h) > 0 {
		n := int(h[0])
		if 1+n+1 > len(h) {
			return
		}
		name, kind := h[1:1+n], h[1+n]
		h = h[1+n+1:]
		var size int
		switch kind {
		case 0, 1: // true, false
		case 2: // byte
			size = 1
		case 3: // int16
			size = 2
		case 4: // int32
			size = 4
		case 5, 8: // int64, timestamp
			size = 8
		case 9: // uuid
			size = 16
		case 6, 7: // bytes, string: a 16-bit length first
			if len(h) < 2 {
				return
			}
			size, h = int(binary.BigEndian.Uint16(h)), h[2:]
		default:
			return
		}
		if size > len(h) {
			return
		}
		switch value := h[:size]; {
		case kind == 7 && string(name) == ":message-type":
			messageType = value
		case kind == 7 && string(name) == ":event-type":
			eventType = value
		}
		h = h[size:]
	}
	return
}

// stringMember returns the content of the string member name (quoted) of a
// flat JSON object such as a chunk's payload, whose strings hold no quote,
// or nil.
func stringMember(doc []byte, name string) []byte {
	i := bytes.Index(doc, []byte(name))
	if i < 0 {
		return nil
	}
	i = skipSpace(doc, i+len(name))
	if i >= len(doc) || doc[i] != ':' {
		return nil
	}
	if i = skipSpace(doc, i+1); i >= len(doc) || doc[i] != '"' {
		return nil
	}
	value := doc[i+1:]
	end := bytes.IndexByte(value, '"')
	if end < 0 {
		return nil
	}
	return value[:end]
}
