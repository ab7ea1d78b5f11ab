"""Write a stitched run back in the formats users already look at (TensorBoard, W&B),
so that the fixed timeline (superseded points dropped, restarted steps re-based) is one
clean curve in their own tools. Writers only: the timeline comes from `api.stitch`."""
