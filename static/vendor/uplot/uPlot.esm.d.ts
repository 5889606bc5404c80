// The vendored copy's types are the ones its npm package ships (the same version, from package-lock.json).
import uPlot from "uplot";
export default uPlot;
