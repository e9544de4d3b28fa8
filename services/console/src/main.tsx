/** Entry point: styles (extracted to a file by Vite: the CSP allows no inline style element) and the app. */
import { render } from 'preact';
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { App } from './app.tsx';

render(<App />, document.getElementById('app')!);
