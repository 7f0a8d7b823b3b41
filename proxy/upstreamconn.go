package proxy

import (
	"context"
	"errors"
	"io"
	"net"
)

// dialBodyConns wraps dial so that the connections it makes write request
// bodies held in memory as they are (see bodyConn).
func dialBodyConns(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return bodyConn{c}, nil
	}
}

// bodyConn is a connection to an upstream over which net/http writes request
// bodies itself (HTTP/1.1 without TLS: an upstream in the same cluster, a
// local model server). net/http hands it a body of known length as an
// io.LimitedReader, which hides the body's own WriteTo, and a TCP
// connection's ReadFrom then copies it through a 32 KiB buffer allocated for
// every request, 32 KiB a system call. A body already in memory, as every
// body the gateway forwards is, goes out instead in one write from where it
// lies; any other goes through a pooled buffer. Over TLS the transport
// writes to the TLS connection, and this one only carries its records.
type bodyConn struct{ net.Conn }

// heldBytes is a body in memory that says how much of it is left to write.
type heldBytes interface {
	io.WriterTo
	Len() int
}

var (
	_ io.ReaderFrom                   = bodyConn{}
	_ interface{ CloseWrite() error } = bodyConn{}
	_ heldBytes                       = (*heldReader)(nil)
)

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(heldBytes); ok && int64(b.Len()) <= lr.N {
			n, err := b.WriteTo(c.Conn)
			lr.N -= n
			return n, err
		}
	}
	buf := copyBuffers{}.Get()
	defer copyBuffers{}.Put(buf)
	// Only the Write of the connection: its own ReadFrom is what allocates.
	return io.CopyBuffer(struct{ io.Writer }{c.Conn}, r, buf)
}

// CloseWrite half-closes the connection as a TCP connection does: a protocol
// switched to after a 101 answer (a WebSocket passed through) ends each
// direction on its own.
func (c bodyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
