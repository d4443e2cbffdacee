// Package strictjson decodes the JSON that privtrain reads from files it wrote (checkpoint
// metadata, stored layer settings) strictly: a field the destination does not have, or
// anything after the one JSON value, is an error rather than silently ignored.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Unmarshal decodes the one JSON value in data into v (as json.Unmarshal), refusing
// unknown object fields and data after the value.
func Unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}
